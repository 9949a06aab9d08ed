#include "server/engine_thread.h"

#include <cstdio>
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

const Backend* EngineThread::backend() const {
  return ready_backend_.load();
}

EngineState EngineThread::wait_until_loaded() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return state_ != EngineState::loading; });
  return state_;
}

void EngineThread::post(GenerationJob job) {
  std::lock_guard lock(mutex_);
  if (state_ == EngineState::loading)
    throw ApiError(503, "unavailable_error", "the model is still loading; retry shortly");
  if (state_ != EngineState::ready) throw ApiError(503, "unavailable_error", "server is stopping");
  if (queue_.size() + running_count_ >= max_queue_)
    throw ApiError(503, "unavailable_error",
                   "server is busy: " + std::to_string(max_queue_) +
                       " requests are already queued; retry later");
  queue_.push_back(std::move(job));
  changed_.notify_all();
}

size_t EngineThread::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

size_t EngineThread::active() const {
  std::lock_guard lock(mutex_);
  return queue_.size() + running_count_;
}

SchedulerCounts EngineThread::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

bool EngineThread::load_backend() {
  try {
    auto backend = factory_();
    ModelInfo info{model_id_,
                   backend->context_size(),
                   backend->vocab_size(),
                   backend->default_options(),
                   static_cast<long long>(std::time(nullptr)),
                   backend->has_draft_model(),
                   backend->output_format(),
                   backend->architecture(),
                   backend->embedding_dimension()};
    std::lock_guard lock(mutex_);
    backend_ = std::move(backend);
    ready_backend_.store(backend_.get());
    info_ = std::move(info);
    counts_ = backend_->counts();  // /stats answers before the first step
    if (state_ == EngineState::loading) state_ = EngineState::ready;
  } catch (const std::exception& error) {
    std::lock_guard lock(mutex_);
    load_error_ = error.what();
    state_ = EngineState::failed;
  }
  changed_.notify_all();
  return backend_ != nullptr;
}

void EngineThread::finished(SequenceId id) {
  running_.erase(id);
  {
    std::lock_guard lock(mutex_);
    --running_count_;
  }
  changed_.notify_all();
}

void EngineThread::submit(GenerationJob job) {
  auto channel = job.channel;
  auto refuse = [&](ErrorResponse response) {
    channel->push(std::move(response));
    std::lock_guard lock(mutex_);
    --running_count_;
  };
  if (channel->cancelled())  // whoever waits on it still gets an answer
    return refuse(error_response(ApiError(503, "unavailable_error", "request cancelled")));
  // The id is known once submit returns; the sink's callbacks run later,
  // from step().
  auto id = std::make_shared<SequenceId>(0);
  SequenceSink sink{[channel](const TextChunk& chunk) {
                      if (channel->cancelled()) return false;
                      channel->push(chunk);
                      return true;
                    },
                    [this, channel, id](TextResult result) {
                      channel->push(std::move(result));
                      finished(*id);
                    },
                    [this, channel, id](std::exception_ptr error) {
                      auto response = error_response_for(error);
                      if (response.status == 500)
                        std::cerr << "error: generation failed: "
                                  << response.body["error"]["message"].get<std::string>()
                                  << std::endl;
                      channel->push(std::move(response));
                      finished(*id);
                    }};
  const int prompt_tokens = static_cast<int>(job.text.prompt_ids.size());
  try {
    *id = backend_->submit(std::move(job.text), std::move(sink));
  } catch (...) {
    return refuse(error_response_for(std::current_exception()));
  }
  channel->push(PromptReady{prompt_tokens});
  running_[*id] = channel;
}

void EngineThread::pass_on_cancellations() {
  for (const auto& [id, channel] : running_)
    if (channel->cancelled()) backend_->cancel(id);
}

void EngineThread::flush_prompt_cache() {
  std::unique_lock lock(mutex_);
  if (state_ != EngineState::ready)
    throw ApiError(503, "unavailable_error", "the model is not ready");
  const std::uint64_t ticket = ++flushes_requested_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return flushes_done_ >= ticket || state_ != EngineState::ready; });
  if (flushes_done_ < ticket) throw ApiError(503, "unavailable_error", "server is stopping");
  if (!flush_error_.empty()) throw ApiError(500, "server_error", flush_error_);
}

void EngineThread::flush_if_requested() {
  std::uint64_t requested;
  {
    std::lock_guard lock(mutex_);
    requested = flushes_requested_;
    if (requested == flushes_done_) return;
  }
  std::string error;
  try {
    backend_->flush_prompt_cache();
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  {
    std::lock_guard lock(mutex_);
    flushes_done_ = requested;
    flush_error_ = error;
    counts_ = backend_->counts();  // what the flush answer reports
  }
  changed_.notify_all();
}

void EngineThread::run_on_engine(std::function<void(Backend&)> task) {
  std::future<void> done;
  {
    std::lock_guard lock(mutex_);
    if (state_ != EngineState::ready)
      throw ApiError(503, "unavailable_error", "the model is not ready");
    tasks_.push_back({std::move(task), {}});
    done = tasks_.back().done.get_future();
  }
  changed_.notify_all();
  done.get();
}

void EngineThread::run_tasks() {
  std::deque<EngineTask> tasks;
  {
    std::lock_guard lock(mutex_);
    tasks.swap(tasks_);
  }
  for (auto& task : tasks) {
    try {
      task.run(*backend_);
      task.done.set_value();
    } catch (...) {
      task.done.set_exception(std::current_exception());
    }
  }
}

void EngineThread::run_loop() {
  if (!load_backend()) return;
  while (true) {
    std::deque<GenerationJob> incoming;
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] {
        return stop_requested_ || !queue_.empty() || !running_.empty() ||
               flushes_requested_ != flushes_done_ || !tasks_.empty();
      });
      incoming.swap(queue_);
      running_count_ += incoming.size();
      stopping = stop_requested_;
    }
    for (auto& job : incoming) {
      if (!stopping) {
        submit(std::move(job));
        continue;
      }
      // Past the grace period: answered, never started.
      job.channel->push(error_response(ApiError(503, "unavailable_error", "server is stopping")));
      std::lock_guard lock(mutex_);
      --running_count_;
    }
    if (stopping)
      for (const auto& entry : running_) entry.second->cancel();
    pass_on_cancellations();
    if (backend_->has_work()) backend_->step();
    {
      std::lock_guard lock(mutex_);
      counts_ = backend_->counts();
    }
    flush_if_requested();
    run_tasks();
    if (stopping && running_.empty()) {
      // What the prefix cache holds survives the restart, where there is
      // an SSD cache: written before the thread ends.
      {
        std::lock_guard lock(mutex_);
        ++flushes_requested_;
      }
      flush_if_requested();
      std::lock_guard lock(mutex_);
      if (!flush_error_.empty())
        std::fprintf(stderr, "mlx-cpp: flushing the prompt cache at shutdown: %s\n",
                     flush_error_.c_str());
      return;
    }
  }
}

void EngineThread::shutdown(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mutex_);
    if (state_ == EngineState::ready || state_ == EngineState::loading)
      state_ = EngineState::stopping;
    changed_.wait_for(lock, grace, [this] { return queue_.empty() && running_count_ == 0; });
    stop_requested_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Posted while the model was still loading, or after a failed load.
  std::deque<GenerationJob> abandoned;
  {
    std::lock_guard lock(mutex_);
    abandoned.swap(queue_);
  }
  for (auto& job : abandoned)
    job.channel->push(error_response(ApiError(503, "unavailable_error", "server is stopping")));
  std::deque<EngineTask> unrun;
  {
    std::lock_guard lock(mutex_);
    unrun.swap(tasks_);
  }
  for (auto& task : unrun)
    task.done.set_exception(
        std::make_exception_ptr(ApiError(503, "unavailable_error", "server is stopping")));
}

}  // namespace mlx_cpp::server
