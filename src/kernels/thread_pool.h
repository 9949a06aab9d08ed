#pragma once
// A small persistent thread pool for the CPU kernels. MLX evaluates CPU
// primitives on its own scheduler thread; that thread calls parallel_for and
// works alongside the pool's workers, so a pool of `thread_count()` threads
// keeps `thread_count() - 1` workers. Workers spin briefly after a job (decode
// issues many short kernels back to back) and then sleep on a condition
// variable, so an idle pool costs nothing.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mlx_cpp::kernels {

class ThreadPool {
 public:
  // The pool every kernel shares; sized to the hardware's cores at first use.
  static ThreadPool& shared();

  explicit ThreadPool(int thread_count);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int thread_count() const { return static_cast<int>(workers_.size()) + 1; }
  // Restarts the workers; count < 1 means the hardware's core count.
  void set_thread_count(int count);

  // Calls task(i) for every i in [0, task_count) on the caller and the
  // workers, returning when all are done; the first exception a task throws
  // is rethrown here. Runs inline when the pool is already in use (a second
  // stream, or a task that itself calls parallel_for).
  void parallel_for(int task_count, const std::function<void(int)>& task);

 private:
  // One parallel_for call. Workers hold it by shared_ptr, so one that wakes
  // late only finds no index left to claim: the caller waits for the tasks
  // that were claimed, never for idle workers to check in (which, on a
  // busy machine, can take a scheduler time slice).
  struct Job {
    const std::function<void(int)>* task;
    int task_count;
    std::atomic<int> next_task{0};
    std::atomic<int> tasks_left;
    std::mutex error_mutex;
    std::exception_ptr first_error;  // guarded by error_mutex
  };

  void start_workers(int worker_count);
  void stop_workers();
  void worker_loop(std::uint64_t seen_generation);
  // Blocks until the generation changes; returns the job to work on (null
  // when there is none) and sets `stop` when the pool shuts down.
  std::shared_ptr<Job> wait_for_new_job(std::uint64_t& seen_generation, bool& stop);
  static void run_claimed_tasks(Job& job);

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the thread that owns the current job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  bool stopping_ = false;     // guarded by mutex_
  std::shared_ptr<Job> job_;  // guarded by mutex_
};

// Splits [0, count) into `parts` near-equal ranges; returns range `index`
// as {begin, end}, with boundaries rounded to multiples of `align`.
struct Range {
  int begin;
  int end;
};
Range split_range(int count, int parts, int index, int align = 1);

// Runs body(range) over [0, count) split across the shared pool, in pieces
// of at least `min_per_task` items (small jobs stay on the calling thread:
// waking workers costs more than they would save).
void parallel_ranges(int count, int min_per_task, const std::function<void(Range)>& body);

}  // namespace mlx_cpp::kernels
