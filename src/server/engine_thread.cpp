#include "server/engine_thread.h"

#include <ctime>
#include <iostream>

namespace mlx_cpp::server {

EngineThread::EngineThread(BackendFactory factory, std::string model_id, size_t max_queue)
    : factory_(std::move(factory)), model_id_(std::move(model_id)), max_queue_(max_queue) {}

EngineThread::~EngineThread() {
  shutdown(std::chrono::milliseconds(0));
}

void EngineThread::start() {
  thread_ = std::thread([this] { run_loop(); });
}

EngineState EngineThread::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::string EngineThread::load_error() const {
  std::lock_guard lock(mutex_);
  return load_error_;
}

std::optional<ModelInfo> EngineThread::model_info() const {
  std::lock_guard lock(mutex_);
  return info_;
}

EngineState EngineThread::wait_until_loaded() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return state_ != EngineState::loading; });
  return state_;
}

void EngineThread::post(EngineTask task) {
  std::lock_guard lock(mutex_);
  if (state_ == EngineState::loading)
    throw ApiError(503, "unavailable_error", "the model is still loading; retry shortly");
  if (state_ != EngineState::ready) throw ApiError(503, "unavailable_error", "server is stopping");
  if (queue_.size() + (running_ ? 1 : 0) >= max_queue_)
    throw ApiError(503, "unavailable_error",
                   "server is busy: " + std::to_string(max_queue_) +
                       " requests are already queued; retry later");
  queue_.push_back(std::move(task));
  changed_.notify_all();
}

size_t EngineThread::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

size_t EngineThread::active() const {
  std::lock_guard lock(mutex_);
  return queue_.size() + (running_ ? 1 : 0);
}

bool EngineThread::load_backend() {
  try {
    auto backend = factory_();
    ModelInfo info{model_id_, backend->context_size(), backend->vocab_size(),
                   backend->default_options(), static_cast<long long>(std::time(nullptr))};
    std::lock_guard lock(mutex_);
    backend_ = std::move(backend);
    info_ = std::move(info);
    if (state_ == EngineState::loading) state_ = EngineState::ready;
  } catch (const std::exception& error) {
    std::lock_guard lock(mutex_);
    load_error_ = error.what();
    state_ = EngineState::failed;
  }
  changed_.notify_all();
  return backend_ != nullptr;
}

void EngineThread::run_loop() {
  if (!load_backend()) return;
  while (true) {
    EngineTask task;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stop_requested_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = task.channel;
    }
    if (!task.channel->cancelled())
      task.run(*backend_, *task.channel);
    else  // whoever waits on it still gets an answer
      task.channel->push(error_response(ApiError(503, "unavailable_error", "request cancelled")));
    {
      std::lock_guard lock(mutex_);
      running_.reset();
    }
    changed_.notify_all();
  }
}

void EngineThread::fail_queued_tasks(const std::string& message) {
  std::deque<EngineTask> abandoned;
  {
    std::lock_guard lock(mutex_);
    abandoned.swap(queue_);
    if (running_) running_->cancel();
  }
  for (auto& task : abandoned) {
    task.channel->cancel();
    task.channel->push(error_response(ApiError(503, "unavailable_error", message)));
  }
}

void EngineThread::shutdown(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mutex_);
    if (state_ == EngineState::ready || state_ == EngineState::loading)
      state_ = EngineState::stopping;
    changed_.wait_for(lock, grace, [this] { return queue_.empty() && !running_; });
    stop_requested_ = true;
  }
  changed_.notify_all();
  fail_queued_tasks("server is stopping");
  if (thread_.joinable()) thread_.join();
}

}  // namespace mlx_cpp::server
