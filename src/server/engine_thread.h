#pragma once
// The one thread that owns the model. It builds the Backend (loading the
// model), then runs queued tasks one at a time. HTTP threads only post
// tasks and read each task's ResultChannel; they never touch the Backend.
// A continuous-batching scheduler replaces run_loop() later without
// changing this interface.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "server/backend.h"
#include "server/completion_request.h"
#include "server/result_channel.h"

namespace mlx_cpp::server {

struct EngineTask {
  std::function<void(Backend&, ResultChannel&)> run;
  std::shared_ptr<ResultChannel> channel;
};

enum class EngineState { loading, ready, failed, stopping };

class EngineThread {
 public:
  // max_queue bounds the tasks waiting or running; beyond it post() answers 503.
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
  // Blocks until the model is loaded or failed to load.
  EngineState wait_until_loaded() const;

  // Queues a task. Throws ApiError 503 when loading, stopping or full.
  void post(EngineTask task);
  size_t queued() const;  // waiting, not yet running
  size_t active() const;  // waiting + running

  // Refuses new tasks, lets queued and running ones finish for up to
  // `grace`, then cancels what is left and joins the thread.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void run_loop();
  bool load_backend();
  void fail_queued_tasks(const std::string& message);

  BackendFactory factory_;
  std::string model_id_;
  size_t max_queue_;
  std::unique_ptr<Backend> backend_;
  std::optional<ModelInfo> info_;
  std::string load_error_;
  EngineState state_ = EngineState::loading;
  std::deque<EngineTask> queue_;
  std::shared_ptr<ResultChannel> running_;
  bool stop_requested_ = false;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::thread thread_;
};

}  // namespace mlx_cpp::server
