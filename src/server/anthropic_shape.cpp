#include "server/anthropic_shape.h"

#include <random>

#include "server/sse.h"

namespace mlx_cpp::server {
namespace {

using Json = nlohmann::ordered_json;

std::string message_id() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static const char digits[] = "0123456789abcdef";
  std::string id = "msg_";
  for (int i = 0; i < 24; ++i) id += digits[generator() % 16];
  return id;
}

// "event: NAME\ndata: JSON\n\n": Anthropic's clients dispatch on the name.
std::string named_event(const std::string& name, const Json& data) {
  return "event: " + name + "\n" + sse_event(data);
}

// A tool call's input as the object the client expects; arguments that do
// not parse (a model that wrote broken JSON) give an empty input rather
// than failing the whole answer.
Json input_of(const std::string& arguments) {
  auto input = Json::parse(arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

// The stop string that ended the generation. The engine reports only
// "stop" for both an end-of-sequence token and a stop string, but it ends
// at the first match, so the earliest stop string in the decoded completion
// is the one that matched.
Json matched_stop_sequence(const AnthropicShapeOptions& options, const TextResult& result) {
  if (options.stop_sequences.empty() || !options.backend || result.finish_reason != "stop")
    return nullptr;
  const auto text = options.backend->decode(result.completion_ids);
  size_t earliest = std::string::npos;
  Json matched = nullptr;
  for (const auto& stop : options.stop_sequences)
    if (auto at = text.find(stop); at < earliest) {
      earliest = at;
      matched = stop;
    }
  return matched;
}

enum class BlockKind { none, thinking, text, tool_use };

class AnthropicShape : public ResponseShape {
 public:
  AnthropicShape(AnthropicShapeOptions options, chat::OutputParser parser)
      : options_(std::move(options)), parser_(std::move(parser)), id_(message_id()) {}

  std::string stream_opening() override {
    Json usage = {{"input_tokens", options_.prompt_tokens}, {"output_tokens", 0}};
    auto message = envelope();
    message["content"] = Json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = std::move(usage);
    return named_event("message_start", {{"type", "message_start"}, {"message", message}}) +
           named_event("ping", {{"type", "ping"}});
  }

  std::string stream_chunk(const TextChunk& chunk) override {
    return delta_events(parser_.feed(chunk.text));
  }

  void finish() override { held_ = parser_.finish(); }
  std::string reasoning() const override { return parser_.message().reasoning; }

  std::string stream_closing(const TextResult& result, const Usage& usage, bool) override {
    std::string data = delta_events(held_);
    data += close_block();
    const auto stop = matched_stop_sequence(options_, result);
    Json delta = {{"stop_reason", stop_reason(result, stop)}, {"stop_sequence", stop}};
    data += named_event("message_delta",
                        {{"type", "message_delta"}, {"delta", delta}, {"usage", usage_of(usage)}});
    return data + named_event("message_stop", {{"type", "message_stop"}});
  }

  std::string stream_error(const ErrorResponse& error) override {
    return named_event("error", anthropic_error_body(error));
  }
  Json error_body(const ErrorResponse& error) const override { return anthropic_error_body(error); }

  Json whole_response(const std::vector<TextChunk>&, const TextResult& result,
                      const Usage& usage) override {
    const auto& message = parser_.message();
    auto content = Json::array();
    if (!message.reasoning.empty())
      content.push_back({{"type", "thinking"}, {"thinking", message.reasoning}, {"signature", ""}});
    if (!message.content.empty()) content.push_back({{"type", "text"}, {"text", message.content}});
    for (const auto& call : message.tool_calls)
      content.push_back({{"type", "tool_use"},
                         {"id", call.id},
                         {"name", call.name},
                         {"input", input_of(call.arguments)}});
    auto response = envelope();
    response["content"] = std::move(content);
    const auto stop = matched_stop_sequence(options_, result);
    response["stop_reason"] = stop_reason(result, stop);
    response["stop_sequence"] = stop;
    response["usage"] = usage_of(usage);
    return response;
  }

 private:
  Json envelope() const {
    return {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", options_.model}};
  }

  // Anthropic counts input_tokens apart from the cached ones: the prompt is
  // input_tokens + cache_read_input_tokens (this server writes no cache
  // entries a client pays for, hence cache_creation_input_tokens 0).
  static Json usage_of(const Usage& usage) {
    return {{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
            {"output_tokens", usage.completion_tokens},
            {"cache_read_input_tokens", usage.cached_tokens},
            {"cache_creation_input_tokens", 0}};
  }

  std::string stop_reason(const TextResult& result, const Json& stop_sequence) const {
    if (result.finish_reason == "length") return "max_tokens";
    if (!parser_.message().tool_calls.empty()) return "tool_use";
    if (!stop_sequence.is_null()) return "stop_sequence";
    return "end_turn";  // the model's end, or a generation the server cancelled
  }

  // The events for one parsed delta: each kind of output lives in its own
  // block, so a change of kind (or a new tool call) closes the open block.
  std::string delta_events(const chat::OutputDelta& delta) {
    std::string data;
    if (!delta.reasoning.empty()) {
      data += open_block(BlockKind::thinking,
                         {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      data += block_delta({{"type", "thinking_delta"}, {"thinking", delta.reasoning}});
    }
    if (!delta.content.empty()) {
      data += open_block(BlockKind::text, {{"type", "text"}, {"text", ""}});
      data += block_delta({{"type", "text_delta"}, {"text", delta.content}});
    }
    for (const auto& call : delta.tool_calls) {
      if (!call.id.empty()) {
        data += close_block();  // every call is a block of its own
        data += open_block(BlockKind::tool_use, {{"type", "tool_use"},
                                                 {"id", call.id},
                                                 {"name", call.name},
                                                 {"input", Json::object()}});
      }
      if (!call.arguments.empty())
        data += block_delta({{"type", "input_json_delta"}, {"partial_json", call.arguments}});
    }
    return data;
  }

  std::string open_block(BlockKind kind, const Json& block) {
    if (open_ == kind) return "";
    std::string data = close_block();
    open_ = kind;
    return data + named_event("content_block_start", {{"type", "content_block_start"},
                                                      {"index", index_},
                                                      {"content_block", block}});
  }

  std::string block_delta(const Json& delta) const {
    return named_event("content_block_delta",
                       {{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}});
  }

  std::string close_block() {
    if (open_ == BlockKind::none) return "";
    open_ = BlockKind::none;
    return named_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_++}});
  }

  AnthropicShapeOptions options_;
  chat::OutputParser parser_;
  std::string id_;
  chat::OutputDelta held_;  // what finish() released
  BlockKind open_ = BlockKind::none;
  int index_ = 0;  // of the open block, or of the next one
};

std::string anthropic_error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status < 500 ? "invalid_request_error" : "api_error";
  }
}

}  // namespace

Json anthropic_error_body(const ErrorResponse& error) {
  std::string message = "unknown error";
  if (error.body.contains("error") && error.body["error"].contains("message") &&
      error.body["error"]["message"].is_string())
    message = error.body["error"]["message"].get<std::string>();
  return {{"type", "error"},
          {"error", {{"type", anthropic_error_type(error.status)}, {"message", message}}}};
}

std::unique_ptr<ResponseShape> make_anthropic_shape(AnthropicShapeOptions options,
                                                    chat::OutputParser parser) {
  return std::make_unique<AnthropicShape>(std::move(options), std::move(parser));
}

}  // namespace mlx_cpp::server
