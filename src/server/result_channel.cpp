#include "server/result_channel.h"

namespace mlx_cpp::server {

void ResultChannel::push(TaskEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

std::optional<TaskEvent> ResultChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
  TaskEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

TaskEvent ResultChannel::wait() {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [this] { return !events_.empty(); });
  TaskEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

}  // namespace mlx_cpp::server
