#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mlx_cpp::kernels {

namespace {

// How long a worker spins on the generation counter before sleeping. A
// decode step runs a few hundred kernels of tens of microseconds each; a
// condition-variable wake-up costs about as much as one such kernel. Longer
// spins cost more than they save where cores are few: a spinning worker
// holds a core the main thread wants for building the next step's graph
// (SmolLM2 decode on 2 cores, interleaved runs: 50 us ~5-7% faster than
// 200 us, 10 us and 0 us slower again).
constexpr auto kSpinDuration = std::chrono::microseconds(50);

thread_local bool inside_pool_task = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

int hardware_cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

ThreadPool& ThreadPool::shared() {
  // Never destroyed: MLX's stream threads may still be running kernels
  // (inside parallel_for) while static objects are destroyed at exit, so
  // the pool must outlive them. Its workers sleep until the process ends.
  static ThreadPool* pool = new ThreadPool(hardware_cores());
  return *pool;
}

ThreadPool::ThreadPool(int thread_count) {
  start_workers(std::max(1, thread_count) - 1);
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

void ThreadPool::set_thread_count(int count) {
  if (count < 1) count = hardware_cores();
  std::lock_guard<std::mutex> busy(busy_);
  if (count == thread_count()) return;
  stop_workers();
  start_workers(count - 1);
}

void ThreadPool::start_workers(int worker_count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }
  // Workers start from the generation current now, not when their thread
  // happens to run, so a stop or a job issued meanwhile is not missed.
  std::uint64_t generation = generation_.load();
  for (int i = 0; i < worker_count; ++i) {
    workers_.emplace_back([this, generation] { worker_loop(generation); });
  }
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
}

std::shared_ptr<ThreadPool::Job> ThreadPool::wait_for_new_job(std::uint64_t& seen_generation,
                                                              bool& stop) {
  auto spin_until = std::chrono::steady_clock::now() + kSpinDuration;
  for (int spins = 0; generation_.load(std::memory_order_acquire) == seen_generation; ++spins) {
    cpu_relax();
    if ((spins & 255) == 255 && std::chrono::steady_clock::now() > spin_until) break;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [&] { return generation_.load() != seen_generation; });
  seen_generation = generation_.load();
  stop = stopping_;
  return job_;
}

void ThreadPool::worker_loop(std::uint64_t seen_generation) {
  inside_pool_task = true;
  bool stop = false;
  while (true) {
    std::shared_ptr<Job> job = wait_for_new_job(seen_generation, stop);
    if (stop) return;
    if (job) run_claimed_tasks(*job);
  }
}

void ThreadPool::run_claimed_tasks(Job& job) {
  for (int i = job.next_task.fetch_add(1); i < job.task_count; i = job.next_task.fetch_add(1)) {
    try {
      (*job.task)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.first_error) job.first_error = std::current_exception();
    }
    job.tasks_left.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(int task_count, const std::function<void(int)>& task) {
  if (task_count <= 0) return;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (task_count == 1 || workers_.empty() || inside_pool_task || !busy.owns_lock()) {
    for (int i = 0; i < task_count; ++i) task(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->task = &task;
  job->task_count = task_count;
  job->tasks_left.store(task_count);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  inside_pool_task = true;
  run_claimed_tasks(*job);
  inside_pool_task = false;
  while (job->tasks_left.load(std::memory_order_acquire) > 0) cpu_relax();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_.reset();
  }
  if (job->first_error) std::rethrow_exception(job->first_error);
}

Range split_range(int count, int parts, int index, int align) {
  int units = (count + align - 1) / align;
  int begin = static_cast<int>(static_cast<long long>(units) * index / parts) * align;
  int end = static_cast<int>(static_cast<long long>(units) * (index + 1) / parts) * align;
  return {std::min(begin, count), std::min(end, count)};
}

void parallel_ranges(int count, int min_per_task, const std::function<void(Range)>& body) {
  if (count <= 0) return;
  auto& pool = ThreadPool::shared();
  int tasks = std::min(pool.thread_count() * 4, std::max(1, count / std::max(1, min_per_task)));
  if (tasks <= 1) {
    body({0, count});
    return;
  }
  pool.parallel_for(tasks, [&](int task) {
    Range range = split_range(count, tasks, task);
    if (range.begin < range.end) body(range);
  });
}

}  // namespace mlx_cpp::kernels
