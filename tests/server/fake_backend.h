#pragma once
// A scripted Backend for HTTP-layer tests: one token per byte (vocabulary
// 256), a chat "template" of "role: content\n" lines, and a reply that is a
// fixed text emitted byte by byte. Like the real scheduler it steps every
// submitted sequence one token per step(), so answers interleave.
// Generation can be held at a gate or run until cancelled, so tests can
// queue, overload and disconnect on purpose.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "io/error.h"
#include "server/backend.h"

namespace mlx_cpp::server::testing {

struct FakeScript {
  std::string reply = "Hello from the fake model.";
  int context_size = 64;
  bool until_cancelled = false;  // ignore the reply; emit 'x' until cancelled or max_tokens
  std::chrono::milliseconds token_delay{0};
  bool hold_at_gate = false;         // step() emits nothing until open_gate()
  chat::OutputFormat output_format;  // how answers are parsed (none by default)
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(FakeScript script) : script_(std::move(script)) {}

  int context_size() const override { return script_.context_size; }
  chat::OutputFormat output_format() const override { return script_.output_format; }
  std::shared_ptr<const grammar::CompiledGrammar> compile_grammar(
      const grammar::GrammarSpec&) const override {
    throw Error("[grammar] the fake model has no vocabulary to compile grammars against");
  }
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
  std::string render_chat(const nlohmann::ordered_json& messages,
                          const nlohmann::ordered_json& tools,
                          const nlohmann::ordered_json& kwargs) const override {
    {
      std::lock_guard lock(mutex_);
      last_render_ = {{"messages", messages}, {"tools", tools}, {"kwargs", kwargs}};
    }
    std::string text;
    for (const auto& message : messages)
      text += message["role"].get<std::string>() + ": " +
              (message.contains("content") && message["content"].is_string()
                   ? message["content"].get<std::string>()
                   : std::string()) +
              "\n";
    if (kwargs.contains("suffix")) text += kwargs["suffix"].get<std::string>();
    return text;
  }

  SequenceId submit(TextRequest request, SequenceSink sink) override {
    std::lock_guard lock(mutex_);
    last_request_ = request;
    ++started_;
    const SequenceId id = next_id_++;
    running_.emplace(id, Running{std::move(request), std::move(sink)});
    return id;
  }
  void cancel(SequenceId id) override {
    auto found = running_.find(id);
    if (found != running_.end()) found->second.cancel_requested = true;
  }
  bool has_work() const override { return !running_.empty(); }
  void step() override;
  SchedulerCounts counts() const override {
    SchedulerCounts counts;
    counts.decoding = static_cast<int>(running_.size());
    return counts;
  }

  // Test controls (any thread).
  void open_gate();
  int started() const { return started_.load(); }
  int cancelled() const { return cancelled_.load(); }
  TextRequest last_request() const {
    std::lock_guard lock(mutex_);
    return last_request_;
  }
  // What the last chat rendering was given: {messages, tools, kwargs}.
  nlohmann::ordered_json last_render() const {
    std::lock_guard lock(mutex_);
    return last_render_;
  }

 private:
  struct Running {
    TextRequest request;
    SequenceSink sink;
    TextResult result;
    bool cancel_requested = false;
  };
  // Emits the next byte; false when the sequence has ended.
  bool advance(Running& running);

  FakeScript script_;
  mutable std::mutex mutex_;
  std::condition_variable gate_changed_;
  bool gate_open_ = false;
  TextRequest last_request_;
  mutable nlohmann::ordered_json last_render_;
  SequenceId next_id_ = 1;
  std::map<SequenceId, Running> running_;  // engine thread only
  std::atomic<int> started_{0};
  std::atomic<int> cancelled_{0};
};

inline void FakeBackend::open_gate() {
  std::lock_guard lock(mutex_);
  gate_open_ = true;
  gate_changed_.notify_all();
}

inline void FakeBackend::step() {
  if (script_.hold_at_gate) {
    std::unique_lock lock(mutex_);
    // Waits a little at a time, so cancellations still get through.
    if (!gate_changed_.wait_for(lock, std::chrono::milliseconds(5), [this] { return gate_open_; }))
      return;
  }
  if (script_.token_delay.count() > 0) std::this_thread::sleep_for(script_.token_delay);
  for (auto it = running_.begin(); it != running_.end();) {
    if (advance(it->second)) {
      ++it;
      continue;
    }
    auto finished = std::move(it->second);
    it = running_.erase(it);
    finished.result.cached_prompt_tokens = 3;
    finished.sink.on_finish(std::move(finished.result));
  }
}

inline bool FakeBackend::advance(Running& running) {
  auto& result = running.result;
  const auto& request = running.request;
  const int i = static_cast<int>(result.completion_ids.size());
  if (running.cancel_requested) {
    ++cancelled_;
    result.finish_reason = "cancelled";
    return false;
  }
  if (i >= request.options.max_tokens) {
    result.finish_reason = "length";
    return false;
  }
  if (!script_.until_cancelled && i >= static_cast<int>(script_.reply.size())) {
    result.finish_reason = "stop";
    return false;
  }
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
  if (!running.sink.on_chunk(chunk)) {
    ++cancelled_;
    result.finish_reason = "cancelled";
    return false;
  }
  return true;
}

}  // namespace mlx_cpp::server::testing
