#pragma once
// The per-task result queue between the engine thread (producer) and the
// HTTP thread serving that task (consumer), plus the task's cancel flag:
// the HTTP side sets it when its client goes away and the engine checks it
// in the chunk callback, so generation stops at the next token.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <variant>

#include "engine/text_request.h"
#include "server/api_error.h"

namespace mlx_cpp::server {

// The prompt is tokenized and fits: the response can start (status 200).
struct PromptReady {
  int prompt_tokens = 0;
};

// Generation events in order: PromptReady, TextChunk*, TextResult; or an
// ErrorResponse at any point (before PromptReady it decides the HTTP status).
using TaskEvent = std::variant<PromptReady, TextChunk, TextResult, ErrorResponse>;

class ResultChannel {
 public:
  void push(TaskEvent event);
  // The next event, or nullopt after `timeout` without one.
  std::optional<TaskEvent> pop(std::chrono::milliseconds timeout);
  // Waits as long as it takes: the engine answers every task it accepted.
  TaskEvent wait();
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TaskEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace mlx_cpp::server
