#pragma once
// The one thread that owns the model. It builds the Backend (loading the
// model), then runs the scheduler: each turn it takes the generations HTTP
// threads posted (data: a tokenized request and its ResultChannel),
// submits them, passes on cancellations, and steps every running sequence
// once. HTTP threads only post and read their channel; tokenizing and
// rendering they do themselves (backend() is thread-safe for those).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "server/backend.h"
#include "server/completion_request.h"
#include "server/result_channel.h"

namespace mlx_cpp::server {

// One generation to run: the request (prompt tokenized, max_tokens fitted
// to the context) and where its events go.
struct GenerationJob {
  TextRequest text;
  std::shared_ptr<ResultChannel> channel;
};

enum class EngineState { loading, ready, failed, stopping };

class EngineThread {
 public:
  // max_queue bounds the generations waiting or running; beyond it post()
  // answers 503.
  EngineThread(BackendFactory factory, std::string model_id, size_t max_queue);
  ~EngineThread();
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  void start();
  const std::string& model_id() const { return model_id_; }
  EngineState state() const;
  std::string load_error() const;
  // Set once the model is loaded.
  std::optional<ModelInfo> model_info() const;
  // The loaded backend, for its thread-safe calls (encode, decode,
  // render_chat); null until loaded.
  const Backend* backend() const;
  // Blocks until the model is loaded or failed to load.
  EngineState wait_until_loaded() const;

  // Queues a generation. Throws ApiError 503 when loading, stopping or full.
  void post(GenerationJob job);
  size_t queued() const;  // posted, not yet submitted to the scheduler
  size_t active() const;  // posted and not yet finished
  // The scheduler's counts as of its latest step.
  SchedulerCounts counts() const;

  // Puts every cached prompt on disk where the backend has an SSD cache
  // (POST /admin/cache/flush): returns once the engine thread did, between
  // two steps. Throws ApiError 503 unless the model is ready.
  void flush_prompt_cache();
  // Runs `task` on the engine thread between two steps and returns once it
  // did, rethrowing what it threw (work on the model's arrays, such as
  // mounting an adapter). Throws ApiError 503 unless the model is ready.
  void run_on_engine(std::function<void(Backend&)> task);

  // Refuses new generations, lets queued and running ones finish for up
  // to `grace`, then cancels what is left (each answer still gets its last
  // events) and joins the thread.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void run_loop();
  bool load_backend();
  void submit(GenerationJob job);
  void pass_on_cancellations();
  void finished(SequenceId id);

  BackendFactory factory_;
  std::string model_id_;
  size_t max_queue_;
  std::unique_ptr<Backend> backend_;
  std::atomic<const Backend*> ready_backend_{nullptr};
  std::optional<ModelInfo> info_;
  std::string load_error_;
  EngineState state_ = EngineState::loading;
  std::deque<GenerationJob> queue_;
  size_t running_count_ = 0;  // submitted, not finished (guarded by mutex_)
  SchedulerCounts counts_;    // guarded by mutex_
  // Engine thread only: the channel of every submitted sequence.
  std::map<SequenceId, std::shared_ptr<ResultChannel>> running_;
  bool stop_requested_ = false;
  // Flushes asked for and done (guarded by mutex_).
  std::uint64_t flushes_requested_ = 0, flushes_done_ = 0;
  std::string flush_error_;
  void flush_if_requested();
  // Tasks for the engine thread (guarded by mutex_): each is run once and
  // its promise kept.
  struct EngineTask {
    std::function<void(Backend&)> run;
    std::promise<void> done;
  };
  std::deque<EngineTask> tasks_;
  void run_tasks();
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::thread thread_;
};

}  // namespace mlx_cpp::server
