#include "server/response_shapes.h"

#include <ctime>
#include <random>

#include "server/sse.h"

namespace mlx_cpp::server {
namespace {

std::string random_id(const std::string& prefix) {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static const char digits[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += digits[generator() % 16];
  return id;
}

nlohmann::ordered_json byte_list(const std::string& text) {
  auto bytes = nlohmann::ordered_json::array();
  for (unsigned char byte : text) bytes.push_back(int(byte));
  return bytes;
}

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
nlohmann::ordered_json chat_logprob_entries(const TextChunk& chunk) {
  auto entries = nlohmann::ordered_json::array();
  for (size_t i = 0; i < chunk.tokens.size(); ++i) {
    const auto& token = chunk.tokens[i];
    auto top = nlohmann::ordered_json::array();
    if (i < chunk.alternatives.size())
      for (const auto& alternative : chunk.alternatives[i])
        top.push_back({{"token", alternative.text},
                       {"logprob", alternative.logprob},
                       {"bytes", byte_list(alternative.text)}});
    entries.push_back({{"token", token.text},
                       {"logprob", token.logprob},
                       {"bytes", byte_list(token.text)},
                       {"top_logprobs", top}});
  }
  return entries;
}

// Completions (legacy) logprobs: parallel lists; offsets count bytes of
// the text produced so far.
struct LegacyLogprobs {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
  nlohmann::ordered_json token_logprobs = nlohmann::ordered_json::array();
  nlohmann::ordered_json top_logprobs = nlohmann::ordered_json::array();
  nlohmann::ordered_json text_offset = nlohmann::ordered_json::array();
  size_t offset = 0;

  void add(const TextChunk& chunk) {
    for (size_t i = 0; i < chunk.tokens.size(); ++i) {
      tokens.push_back(chunk.tokens[i].text);
      token_logprobs.push_back(chunk.tokens[i].logprob);
      auto top = nlohmann::ordered_json::object();
      if (i < chunk.alternatives.size())
        for (const auto& alternative : chunk.alternatives[i])
          top[alternative.text] = alternative.logprob;
      top_logprobs.push_back(top);
      text_offset.push_back(offset);
      offset += chunk.tokens[i].text.size();
    }
  }
  nlohmann::ordered_json to_json() const {
    return {{"tokens", tokens},
            {"token_logprobs", token_logprobs},
            {"top_logprobs", top_logprobs},
            {"text_offset", text_offset}};
  }
};

// A delta as OpenAI streams it: reasoning_content, content, and tool calls
// (the id, type and name in a call's first delta, then argument fragments).
nlohmann::ordered_json delta_json(const chat::OutputDelta& delta) {
  auto json = nlohmann::ordered_json::object();
  if (!delta.reasoning.empty()) json["reasoning_content"] = delta.reasoning;
  if (!delta.content.empty()) json["content"] = delta.content;
  if (delta.tool_calls.empty()) return json;
  auto calls = nlohmann::ordered_json::array();
  for (const auto& call : delta.tool_calls) {
    nlohmann::ordered_json entry = {{"index", call.index}};
    nlohmann::ordered_json function = nlohmann::ordered_json::object();
    if (!call.id.empty()) {
      entry["id"] = call.id;
      entry["type"] = "function";
      function["name"] = call.name;
    }
    function["arguments"] = call.arguments;
    entry["function"] = std::move(function);
    calls.push_back(std::move(entry));
  }
  json["tool_calls"] = std::move(calls);
  return json;
}

nlohmann::ordered_json message_json(const chat::ParsedMessage& message) {
  nlohmann::ordered_json json = {{"role", "assistant"}, {"content", message.content}};
  if (message.content.empty() && !message.tool_calls.empty()) json["content"] = nullptr;
  if (!message.reasoning.empty()) json["reasoning_content"] = message.reasoning;
  if (message.tool_calls.empty()) return json;
  auto calls = nlohmann::ordered_json::array();
  for (const auto& call : message.tool_calls)
    calls.push_back({{"id", call.id},
                     {"type", "function"},
                     {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  json["tool_calls"] = std::move(calls);
  return json;
}

class ChatShape : public OpenAIShape {
 public:
  ChatShape(const std::string& model, bool logprobs, chat::OutputParser parser)
      : OpenAIShape(random_id("chatcmpl-"), "chat.completion.chunk", model, logprobs),
        parser_(std::move(parser)) {}

  void finish() override { held_ = parser_.finish(); }
  std::string reasoning() const override { return parser_.message().reasoning; }
  nlohmann::ordered_json whole_response(const std::vector<TextChunk>& chunks,
                                        const TextResult& result, const Usage& usage) override {
    nlohmann::ordered_json choice = {{"index", 0},
                                     {"message", message_json(parser_.message())},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish_reason(result)}};
    if (logprobs_) {
      auto entries = nlohmann::ordered_json::array();
      for (const auto& chunk : chunks)
        for (auto& entry : chat_logprob_entries(chunk)) entries.push_back(std::move(entry));
      choice["logprobs"] = {{"content", entries}};
    }
    auto response = envelope("chat.completion");
    response["choices"] = nlohmann::ordered_json::array({choice});
    response["usage"] = usage_json(usage);
    return response;
  }

 protected:
  nlohmann::ordered_json opening_chunk() const override {
    return chunk_with({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
  }
  nlohmann::ordered_json text_chunk(const TextChunk& chunk) override {
    auto delta = parser_.feed(chunk.text);
    nlohmann::ordered_json logprobs = nullptr;
    if (logprobs_)
      logprobs = {{"content", chat_logprob_entries(chunk)}};
    else if (delta.empty())
      return nullptr;
    return chunk_with(delta_json(delta), nullptr, logprobs);
  }
  std::vector<nlohmann::ordered_json> closing_chunks(const TextResult& result) override {
    std::vector<nlohmann::ordered_json> chunks;
    if (!held_.empty()) chunks.push_back(chunk_with(delta_json(held_), nullptr, nullptr));
    chunks.push_back(chunk_with(nlohmann::ordered_json::object(), finish_reason(result), nullptr));
    return chunks;
  }

 private:
  // An answer that calls tools and then stops says so.
  std::string finish_reason(const TextResult& result) const {
    auto reason = finish_reason_of(result);
    return reason == "stop" && !parser_.message().tool_calls.empty() ? "tool_calls" : reason;
  }

  nlohmann::ordered_json chunk_with(nlohmann::ordered_json delta,
                                    nlohmann::ordered_json finish_reason,
                                    nlohmann::ordered_json logprobs) const {
    auto chunk = envelope(chunk_object_);
    chunk["choices"] =
        nlohmann::ordered_json::array({{{"index", 0},
                                        {"delta", std::move(delta)},
                                        {"logprobs", std::move(logprobs)},
                                        {"finish_reason", std::move(finish_reason)}}});
    return chunk;
  }

  chat::OutputParser parser_;
  chat::OutputDelta held_;  // what finish() released
};

class CompletionShape : public OpenAIShape {
 public:
  CompletionShape(const std::string& model, bool logprobs)
      : OpenAIShape(random_id("cmpl-"), "text_completion", model, logprobs) {}

  nlohmann::ordered_json whole_response(const std::vector<TextChunk>& chunks,
                                        const TextResult& result, const Usage& usage) override {
    nlohmann::ordered_json logprobs = nullptr;
    if (logprobs_) {
      LegacyLogprobs legacy;
      for (const auto& chunk : chunks) legacy.add(chunk);
      logprobs = legacy.to_json();
    }
    auto response = chunk_with(result.text, finish_reason_of(result), logprobs);
    response["usage"] = usage_json(usage);
    return response;
  }

 protected:
  nlohmann::ordered_json opening_chunk() const override { return nullptr; }
  nlohmann::ordered_json text_chunk(const TextChunk& chunk) override {
    nlohmann::ordered_json logprobs = nullptr;
    if (logprobs_) {
      LegacyLogprobs legacy;
      legacy.add(chunk);
      logprobs = legacy.to_json();
    }
    return chunk_with(chunk.text, nullptr, logprobs);
  }
  std::vector<nlohmann::ordered_json> closing_chunks(const TextResult& result) override {
    return {chunk_with("", finish_reason_of(result), nullptr)};
  }

 private:
  nlohmann::ordered_json chunk_with(const std::string& text, nlohmann::ordered_json finish_reason,
                                    nlohmann::ordered_json logprobs) const {
    auto chunk = envelope(chunk_object_);
    chunk["choices"] =
        nlohmann::ordered_json::array({{{"index", 0},
                                        {"text", text},
                                        {"logprobs", std::move(logprobs)},
                                        {"finish_reason", std::move(finish_reason)}}});
    return chunk;
  }
};

}  // namespace

nlohmann::ordered_json usage_json(const Usage& usage) {
  nlohmann::ordered_json json{{"prompt_tokens", usage.prompt_tokens},
                              {"completion_tokens", usage.completion_tokens},
                              {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
                              {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
  auto details = nlohmann::ordered_json::object();
  if (usage.reasoning_tokens > 0) details["reasoning_tokens"] = usage.reasoning_tokens;
  if (usage.speculative) {
    details["accepted_prediction_tokens"] = usage.accepted_prediction_tokens;
    details["rejected_prediction_tokens"] = usage.rejected_prediction_tokens;
  }
  if (!details.empty()) json["completion_tokens_details"] = std::move(details);
  return json;
}

std::string finish_reason_of(const TextResult& result) {
  if (result.finish_reason.empty()) return "stop";
  return result.finish_reason;
}

std::string ResponseShape::stream_error(const ErrorResponse& error) {
  return sse_event(error.body) + sse_done();
}

OpenAIShape::OpenAIShape(std::string id, std::string object, std::string model, bool logprobs)
    : id_(std::move(id)),
      chunk_object_(std::move(object)),
      model_(std::move(model)),
      created_(static_cast<long long>(std::time(nullptr))),
      logprobs_(logprobs) {}

nlohmann::ordered_json OpenAIShape::envelope(const std::string& object) const {
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
}

nlohmann::ordered_json OpenAIShape::usage_chunk(const Usage& usage) const {
  auto chunk = envelope(chunk_object_);
  chunk["choices"] = nlohmann::ordered_json::array();
  chunk["usage"] = usage_json(usage);
  return chunk;
}

std::string OpenAIShape::stream_opening() {
  auto opening = opening_chunk();
  return opening.is_null() ? "" : sse_event(opening);
}

std::string OpenAIShape::stream_chunk(const TextChunk& chunk) {
  auto json = text_chunk(chunk);
  return json.is_null() ? "" : sse_event(json);
}

std::string OpenAIShape::stream_closing(const TextResult& result, const Usage& usage,
                                        bool include_usage) {
  std::string data;
  for (const auto& chunk : closing_chunks(result)) data += sse_event(chunk);
  if (include_usage) data += sse_event(usage_chunk(usage));
  return data + sse_done();
}

std::unique_ptr<ResponseShape> make_chat_shape(const std::string& model, bool logprobs,
                                               chat::OutputParser parser) {
  return std::make_unique<ChatShape>(model, logprobs, std::move(parser));
}

std::unique_ptr<ResponseShape> make_completion_shape(const std::string& model, bool logprobs) {
  return std::make_unique<CompletionShape>(model, logprobs);
}

}  // namespace mlx_cpp::server
