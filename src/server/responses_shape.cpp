#include "server/responses_shape.h"

#include <ctime>
#include <random>
#include <utility>

#include "server/sse.h"

namespace mlx_cpp::server {
namespace {

using Json = nlohmann::ordered_json;

std::string random_id(const std::string& prefix) {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static const char digits[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 32; ++i) id += digits[generator() % 16];
  return id;
}

enum class ItemKind { none, reasoning, message, function_call };

// Output items are built as the parsed deltas arrive, for whole responses
// too (whose event texts are dropped), so a streamed response and the one
// it completes with (and stores) cannot disagree on items or their ids.
class ResponsesShape : public ResponseShape {
 public:
  ResponsesShape(ResponsesShapeOptions options, chat::OutputParser parser)
      : options_(std::move(options)),
        parser_(std::move(parser)),
        id_(random_id("resp_")),
        created_at_(static_cast<long long>(std::time(nullptr))) {}

  std::string stream_opening() override {
    auto response = envelope("in_progress");
    response["usage"] = nullptr;
    // Two statements: the events number themselves in the order they are made.
    std::string opening = event("response.created", {{"response", response}});
    return opening + event("response.in_progress", {{"response", response}});
  }

  std::string stream_chunk(const TextChunk& chunk) override {
    return delta_events(parser_.feed(chunk.text));
  }

  // Two statements: the held text must join the open item before it closes.
  void finish() override {
    held_events_ = delta_events(parser_.finish());
    held_events_ += close_item();
  }
  std::string reasoning() const override { return parser_.message().reasoning; }

  std::string stream_closing(const TextResult& result, const Usage& usage, bool) override {
    auto response = finished_response(result, usage);
    const std::string name =
        response["status"] == "completed" ? "response.completed" : "response.incomplete";
    return held_events_ + event(name, {{"response", std::move(response)}});
  }

  // OpenAI's error event: the message, code and param at its top level.
  std::string stream_error(const ErrorResponse& error) override {
    const auto& body = error.body.contains("error") ? error.body["error"] : Json::object();
    Json code = body.contains("code") && !body["code"].is_null() ? body["code"]
                                                                 : body.value("type", Json());
    return event("error", {{"code", code},
                           {"message", body.value("message", "unknown error")},
                           {"param", body.value("param", Json())}});
  }

  Json whole_response(const std::vector<TextChunk>&, const TextResult& result,
                      const Usage& usage) override {
    return finished_response(result, usage);
  }

 private:
  Json envelope(const std::string& status) const {
    Json response = {{"id", id_},
                     {"object", "response"},
                     {"created_at", created_at_},
                     {"status", status},
                     {"background", false},
                     {"error", nullptr},
                     {"incomplete_details", nullptr},
                     {"model", options_.model},
                     {"output", Json::array()}};
    for (const auto& [key, value] : options_.echoes.items()) response[key] = value;
    return response;
  }

  // The whole response, kept in the store when asked. A generation cut by
  // its length limit is incomplete, as is one the server cancelled (its
  // shutdown): neither is the model's whole answer.
  Json finished_response(const TextResult& result, const Usage& usage) {
    const auto reason = finish_reason_of(result);
    const bool complete = reason != "length" && reason != "cancelled";
    auto response = envelope(complete ? "completed" : "incomplete");
    if (!complete)
      response["incomplete_details"] = {
          {"reason", reason == "length" ? "max_output_tokens" : "cancelled"}};
    response["output"] = items_;
    response["output_text"] = output_text();
    response["usage"] = usage_of(usage);
    if (options_.store) {
      auto conversation = options_.conversation;
      for (const auto& item : items_) conversation.push_back(item);
      options_.store->put(id_, {response, std::move(conversation)});
      options_.store = nullptr;  // once, however the response is written
    }
    return response;
  }

  std::string output_text() const {
    std::string text;
    for (const auto& item : items_)
      if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
    return text;
  }

  static Json usage_of(const Usage& usage) {
    return {{"input_tokens", usage.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
            {"output_tokens", usage.completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", usage.reasoning_tokens}}},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  }

  // "event: NAME\ndata: JSON\n\n", the JSON's type repeating the name.
  std::string event(const std::string& name, const Json& fields) {
    Json data = {{"type", name}, {"sequence_number", sequence_number_++}};
    for (const auto& [key, value] : fields.items()) data[key] = value;
    return "event: " + name + "\n" + sse_event(data);
  }

  // The events for one parsed delta: each kind of output is an item of its
  // own, so a change of kind (or a new function call) closes the open one.
  std::string delta_events(const chat::OutputDelta& delta) {
    std::string data;
    if (!delta.reasoning.empty()) {
      data += open_item(ItemKind::reasoning);
      data += append_text("response.reasoning_text.delta", delta.reasoning);
    }
    if (!delta.content.empty()) {
      data += open_item(ItemKind::message);
      data += append_text("response.output_text.delta", delta.content);
    }
    for (const auto& call : delta.tool_calls) {
      if (!call.id.empty()) data += open_call(call);
      if (call.arguments.empty() || open_ != ItemKind::function_call) continue;
      auto& arguments = items_.back()["arguments"];
      arguments = arguments.get<std::string>() + call.arguments;
      data += event("response.function_call_arguments.delta",
                    {{"item_id", item_id()}, {"output_index", index()}, {"delta", call.arguments}});
    }
    return data;
  }

  std::string open_item(ItemKind kind) {
    if (open_ == kind) return "";
    std::string data = close_item();
    open_ = kind;
    Json item;
    Json part;
    if (kind == ItemKind::reasoning) {
      item = {{"id", random_id("rs_")},
              {"type", "reasoning"},
              {"summary", Json::array()},
              {"content", Json::array()}};
      part = {{"type", "reasoning_text"}, {"text", ""}};
    } else {
      item = {{"id", random_id("msg_")},
              {"type", "message"},
              {"status", "in_progress"},
              {"role", "assistant"},
              {"content", Json::array()}};
      part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
    }
    items_.push_back(item);
    data += event("response.output_item.added", {{"output_index", index()}, {"item", item}});
    items_.back()["content"].push_back(part);
    return data + event("response.content_part.added", {{"item_id", item_id()},
                                                        {"output_index", index()},
                                                        {"content_index", 0},
                                                        {"part", part}});
  }

  std::string open_call(const chat::ToolCallDelta& call) {
    std::string data = close_item();  // every call is an item of its own
    open_ = ItemKind::function_call;
    Json item = {{"id", random_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
                 {"arguments", ""},        {"call_id", call.id},      {"name", call.name}};
    items_.push_back(item);
    return data + event("response.output_item.added", {{"output_index", index()}, {"item", item}});
  }

  // Text of the open reasoning or message item's one content part.
  std::string append_text(const std::string& name, const std::string& delta) {
    auto& text = items_.back()["content"][0]["text"];
    text = text.get<std::string>() + delta;
    Json fields = {
        {"item_id", item_id()}, {"output_index", index()}, {"content_index", 0}, {"delta", delta}};
    if (open_ == ItemKind::message) fields["logprobs"] = Json::array();
    return event(name, fields);
  }

  std::string close_item() {
    const auto kind = std::exchange(open_, ItemKind::none);
    if (kind == ItemKind::none) return "";
    auto& item = items_.back();
    std::string data;
    if (kind == ItemKind::function_call) {
      data += event("response.function_call_arguments.done", {{"item_id", item_id()},
                                                              {"output_index", index()},
                                                              {"name", item["name"]},
                                                              {"arguments", item["arguments"]}});
    } else {
      const auto& part = item["content"][0];
      Json done = {{"item_id", item_id()},
                   {"output_index", index()},
                   {"content_index", 0},
                   {"text", part["text"]}};
      if (kind == ItemKind::message) done["logprobs"] = Json::array();
      data += event(
          kind == ItemKind::message ? "response.output_text.done" : "response.reasoning_text.done",
          done);
      data += event("response.content_part.done", {{"item_id", item_id()},
                                                   {"output_index", index()},
                                                   {"content_index", 0},
                                                   {"part", part}});
    }
    if (kind != ItemKind::reasoning) item["status"] = "completed";
    return data + event("response.output_item.done", {{"output_index", index()}, {"item", item}});
  }

  // Of the open (last) item.
  int index() const { return static_cast<int>(items_.size()) - 1; }
  std::string item_id() const { return items_.back()["id"].get<std::string>(); }

  ResponsesShapeOptions options_;
  chat::OutputParser parser_;
  std::string id_;
  long long created_at_;
  Json items_ = Json::array();  // the output so far
  ItemKind open_ = ItemKind::none;
  int sequence_number_ = 0;
  std::string held_events_;  // what finish() released, and the last item's end
};

}  // namespace

std::unique_ptr<ResponseShape> make_responses_shape(ResponsesShapeOptions options,
                                                    chat::OutputParser parser) {
  return std::make_unique<ResponsesShape>(std::move(options), std::move(parser));
}

}  // namespace mlx_cpp::server
