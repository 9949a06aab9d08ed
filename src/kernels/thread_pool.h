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
  void start_workers(int worker_count);
  void stop_workers();
  void worker_loop(std::uint64_t seen_generation);
  enum class Wake { stop, nothing, joined };
  // Blocks until the generation changes; joins the job when there is one.
  Wake wait_for_new_job(std::uint64_t& seen_generation);
  void run_claimed_tasks();

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the thread that owns the current job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  const std::function<void(int)>* job_ = nullptr;  // guarded by mutex_
  int task_count_ = 0;
  std::atomic<int> next_task_{0};
  std::atomic<int> tasks_left_{0};
  std::atomic<int> active_workers_{0};
  std::exception_ptr first_error_;  // guarded by error_mutex_
  std::mutex error_mutex_;
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
