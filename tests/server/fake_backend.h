#pragma once
// A scripted Backend for HTTP-layer tests: one token per byte (vocabulary
// 256), a chat "template" of "role: content\n" lines, and a reply that is a
// fixed text emitted byte by byte. Generation can be held at a gate or run
// until cancelled, so tests can queue, overload and disconnect on purpose.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "server/backend.h"

namespace mlx_cpp::server::testing {

struct FakeScript {
  std::string reply = "Hello from the fake model.";
  int context_size = 64;
  bool until_cancelled = false;  // ignore the reply; emit 'x' until cancelled or max_tokens
  std::chrono::milliseconds token_delay{0};
  bool hold_at_gate = false;  // generate() waits until open_gate()
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(FakeScript script) : script_(std::move(script)) {}

  int context_size() const override { return script_.context_size; }
  int vocab_size() const override { return 256; }
  GenerationOptions default_options() const override {
    GenerationOptions options;
    options.sampler.temperature = 0.5f;  // visible in tests of defaults
    return options;
  }
  std::vector<int> encode(const std::string& text, bool add_special_tokens) const override {
    std::vector<int> ids;
    if (add_special_tokens) ids.push_back('^');
    for (unsigned char byte : text) ids.push_back(byte);
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string text;
    for (int id : ids) text += static_cast<char>(id);
    return text;
  }
  std::string render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json&,
                          const nlohmann::ordered_json& kwargs) const override {
    std::string text;
    for (const auto& message : messages)
      text += message["role"].get<std::string>() + ": " + message.value("content", std::string()) +
              "\n";
    if (kwargs.contains("suffix")) text += kwargs["suffix"].get<std::string>();
    return text;
  }
  TextResult generate(const TextRequest& request,
                      const std::function<bool(const TextChunk&)>& on_chunk) override;

  // Test controls (any thread).
  void open_gate();
  int started() const { return started_.load(); }
  int cancelled() const { return cancelled_.load(); }
  TextRequest last_request() const {
    std::lock_guard lock(mutex_);
    return last_request_;
  }

 private:
  FakeScript script_;
  mutable std::mutex mutex_;
  std::condition_variable gate_changed_;
  bool gate_open_ = false;
  TextRequest last_request_;
  std::atomic<int> started_{0};
  std::atomic<int> cancelled_{0};
};

inline void FakeBackend::open_gate() {
  std::lock_guard lock(mutex_);
  gate_open_ = true;
  gate_changed_.notify_all();
}

inline TextResult FakeBackend::generate(const TextRequest& request,
                                        const std::function<bool(const TextChunk&)>& on_chunk) {
  {
    std::unique_lock lock(mutex_);
    last_request_ = request;
    ++started_;
    if (script_.hold_at_gate) gate_changed_.wait(lock, [this] { return gate_open_; });
  }
  TextResult result;
  result.finish_reason = "length";
  for (int i = 0; i < request.options.max_tokens; ++i) {
    if (!script_.until_cancelled && i >= static_cast<int>(script_.reply.size())) {
      result.finish_reason = "stop";
      break;
    }
    if (script_.token_delay.count() > 0) std::this_thread::sleep_for(script_.token_delay);
    char byte = script_.until_cancelled ? 'x' : script_.reply[i];
    TextChunk chunk;
    chunk.text = std::string(1, byte);
    if (request.logprobs)
      chunk.tokens.push_back({static_cast<unsigned char>(byte), chunk.text, -0.5f});
    if (request.top_logprobs > 0) {
      chunk.alternatives.emplace_back();
      for (int k = 0; k < request.top_logprobs; ++k)
        chunk.alternatives[0].push_back({'a' + k, std::string(1, char('a' + k)), -1.0f - k});
    }
    result.completion_ids.push_back(static_cast<unsigned char>(byte));
    result.text += chunk.text;
    if (!on_chunk(chunk)) {
      ++cancelled_;
      result.finish_reason = "cancelled";
      break;
    }
  }
  result.cached_prompt_tokens = 3;
  return result;
}

}  // namespace mlx_cpp::server::testing
