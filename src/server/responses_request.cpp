#include "server/responses_request.h"

#include <set>
#include <string>
#include <utility>

#include "server/api_error.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

using Json = nlohmann::ordered_json;

std::string field(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

bool present(const Json& body, const char* name) {
  return body.contains(name) && !body[name].is_null();
}

std::string type_of(const Json& value) {
  return value.is_object() && value.contains("type") && value["type"].is_string()
             ? value["type"].get<std::string>()
             : std::string();
}

std::string required_string(const Json& item, const char* key, const std::string& param) {
  if (!item.contains(key) || !item[key].is_string() || item[key].get<std::string>().empty())
    throw invalid_request("'" + param + "." + key + "' must be a non-empty string",
                          param + "." + key);
  return item[key].get<std::string>();
}

// A string, or text parts joined; images, files and audio are refused by
// name (the served models read text only).
std::string text_of_parts(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw invalid_request("'" + param + "' must be a string or a list of content parts", param);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    const auto name = field(param, i);
    const auto type = type_of(part);
    if (type.empty())
      throw invalid_request("'" + name + "' must be a content part with a string 'type'", name);
    if (type != "input_text" && type != "output_text")
      throw invalid_request("'" + name + "': content parts of type '" + type +
                                "' are not supported (only input_text and output_text)",
                            name);
    if (!part.contains("text") || !part["text"].is_string())
      throw invalid_request("'" + name + ".text' must be a string", name + ".text");
    text += part["text"].get<std::string>();
  }
  return text;
}

// Turns items into chat messages in their order. The API lists what one
// assistant turn did as separate items (reasoning, message, function
// calls); the chat templates want them as one assistant message, so
// reasoning waits for the turn it belongs to and function calls join the
// assistant message just before them.
class ConversationBuilder {
 public:
  explicit ConversationBuilder(Json messages) : messages_(std::move(messages)) {}

  void add(const Json& item, const std::string& param) {
    if (!item.is_object()) throw invalid_request("'" + param + "' must be an object", param);
    // Messages may leave out their type (the "easy input message").
    auto type = type_of(item);
    if (type.empty() && item.contains("role")) type = "message";
    if (type == "message") {
      add_message(item, param);
    } else if (type == "reasoning") {
      add_reasoning(item, param);
    } else if (type == "function_call") {
      add_function_call(item, param);
    } else if (type == "function_call_output") {
      add_function_output(item, param);
    } else if (type.empty()) {
      throw invalid_request("'" + param + "' must be an item with a string 'type'", param);
    } else {
      throw invalid_request("'" + param + "': items of type '" + type +
                                "' are not supported (message, reasoning, function_call and "
                                "function_call_output are)",
                            param);
    }
  }

  Json take_messages() { return std::move(messages_); }

 private:
  void add_message(const Json& item, const std::string& param) {
    const auto role = optional_string(item, "role").value_or("");
    static const std::set<std::string> roles = {"user", "assistant", "system", "developer"};
    if (!roles.count(role))
      throw invalid_request("'" + param + ".role' must be user, assistant, system or developer",
                            param + ".role");
    if (!present(item, "content"))
      throw invalid_request("'" + param + ".content' is required", param + ".content");
    const auto text = text_of_parts(item["content"], param + ".content");
    if (role != "assistant") {
      // Chat templates know system, not developer, for the same instructions.
      messages_.push_back({{"role", role == "developer" ? "system" : role}, {"content", text}});
      close_turn();
      return;
    }
    Json message = {{"role", "assistant"}, {"content", text}};
    if (!reasoning_.empty()) message["reasoning_content"] = std::exchange(reasoning_, {});
    messages_.push_back(std::move(message));
    assistant_open_ = true;
  }

  // The reasoning's text, else its summary's: either is what it thought.
  void add_reasoning(const Json& item, const std::string& param) {
    if (assistant_open_) close_turn();  // reasoning starts a new turn
    for (const char* key : {"content", "summary"}) {
      if (!present(item, key)) continue;
      if (!item[key].is_array())
        throw invalid_request("'" + param + "." + key + "' must be a list", param + "." + key);
      std::string text;
      for (const auto& part : item[key])
        if (part.is_object() && part.contains("text") && part["text"].is_string())
          text += part["text"].get<std::string>();
      if (!text.empty()) {
        reasoning_ += text;
        return;
      }
    }
  }

  void add_function_call(const Json& item, const std::string& param) {
    const auto call_id = required_string(item, "call_id", param);
    const auto name = required_string(item, "name", param);
    if (!item.contains("arguments") || !item["arguments"].is_string())
      throw invalid_request("'" + param + ".arguments' must be a string of JSON",
                            param + ".arguments");
    auto arguments = item["arguments"].get<std::string>();
    if (arguments.empty()) arguments = "{}";
    if (Json::parse(arguments, nullptr, false).is_discarded())
      throw invalid_request("'" + param + ".arguments' is not valid JSON", param + ".arguments");
    call_ids_.insert(call_id);
    Json call = {{"id", call_id},
                 {"type", "function"},
                 {"function", {{"name", name}, {"arguments", arguments}}}};
    if (!assistant_open_) {
      Json message = {{"role", "assistant"}, {"content", ""}};
      if (!reasoning_.empty()) message["reasoning_content"] = std::exchange(reasoning_, {});
      messages_.push_back(std::move(message));
      assistant_open_ = true;
    }
    messages_.back()["tool_calls"].push_back(std::move(call));
  }

  void add_function_output(const Json& item, const std::string& param) {
    const auto call_id = required_string(item, "call_id", param);
    if (!call_ids_.count(call_id))
      throw invalid_request("'" + param + "' is a function_call_output whose call_id \"" + call_id +
                                "\" matches no function_call before it",
                            param + ".call_id");
    if (!present(item, "output"))
      throw invalid_request("'" + param + ".output' is required", param + ".output");
    const auto output = text_of_parts(item["output"], param + ".output");
    messages_.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}});
    close_turn();
  }

  // Reasoning left without an answer (the client dropped it) belongs to no
  // turn the template could show.
  void close_turn() {
    assistant_open_ = false;
    reasoning_.clear();
  }

  Json messages_;
  std::set<std::string> call_ids_;  // function calls made so far
  std::string reasoning_;           // waiting for its assistant turn
  bool assistant_open_ = false;     // the last message is an assistant turn
};

// A string input is one user message.
Json input_items(const Json& body) {
  if (!present(body, "input")) throw invalid_request("'input' is required", "input");
  const auto& input = body["input"];
  if (input.is_string())
    return Json::array({{{"type", "message"}, {"role", "user"}, {"content", input}}});
  if (!input.is_array() || input.empty())
    throw invalid_request("'input' must be a string or a non-empty list of items", "input");
  return input;
}

Json instructions_messages(const Json& body) {
  auto messages = Json::array();
  if (!present(body, "instructions")) return messages;
  if (!body["instructions"].is_string())
    throw invalid_request("'instructions' must be a string", "instructions");
  if (!body["instructions"].get<std::string>().empty())
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  return messages;
}

// [{type: function, name, description, parameters, strict}]: the chat API
// nests the same under "function". Hosted tools (web search, file search,
// computer use, ...) run on OpenAI's side and have no meaning here.
Json translate_tools(const Json& tools) {
  if (!tools.is_array()) throw invalid_request("'tools' must be a list", "tools");
  auto translated = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const auto& tool = tools[i];
    const auto param = field("tools", i);
    const auto type = type_of(tool);
    if (type != "function")
      throw invalid_request(
          "'" + param + "': tools of type '" + type + "' are not supported (only function tools)",
          param + ".type");
    Json function = {{"name", required_string(tool, "name", param)}};
    if (auto description = optional_string(tool, "description"))
      function["description"] = *description;
    if (present(tool, "parameters")) {
      if (!tool["parameters"].is_object())
        throw invalid_request("'" + param + ".parameters' must be a JSON schema object",
                              param + ".parameters");
      function["parameters"] = tool["parameters"];
    }
    optional_bool(tool, "strict");  // accepted; arguments follow the grammar only when forced
    translated.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return translated;
}

Json translate_tool_choice(const Json& choice) {
  if (choice.is_string()) return choice;  // auto, none, required: checked by the chat parser
  if (type_of(choice) == "function")
    return {{"type", "function"},
            {"function", {{"name", required_string(choice, "name", "tool_choice")}}}};
  throw invalid_request(
      "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}",
      "tool_choice");
}

// text.format {type: text | json_object | json_schema (name, schema,
// strict)} as the chat API's response_format; null for plain text.
Json translate_text_format(const Json& text) {
  if (!text.is_object()) throw invalid_request("'text' must be an object", "text");
  if (!present(text, "format")) return nullptr;
  const auto& format = text["format"];
  const auto type = type_of(format);
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema")
    throw invalid_request("'text.format.type' must be text, json_object or json_schema",
                          "text.format.type");
  if (!present(format, "schema"))
    throw invalid_request("'text.format.schema' is required", "text.format.schema");
  Json schema = {{"name", optional_string(format, "name").value_or("response")},
                 {"schema", format["schema"]}};
  if (auto strict = optional_bool(format, "strict")) schema["strict"] = *strict;
  return {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

std::optional<std::string> reasoning_effort(const Json& body) {
  if (!present(body, "reasoning")) return std::nullopt;
  if (!body["reasoning"].is_object())
    throw invalid_request("'reasoning' must be an object", "reasoning");
  auto effort = optional_string(body["reasoning"], "effort");
  static const std::set<std::string> levels = {"none", "minimal", "low", "medium", "high"};
  if (effort && !levels.count(*effort))
    throw invalid_request("'reasoning.effort' must be none, minimal, low, medium or high",
                          "reasoning.effort");
  optional_string(body["reasoning"], "summary");  // accepted: reasoning is given whole
  return effort;
}

// Fields of OpenAI's hosted features: refused rather than ignored, so a
// client does not take a silent default for an answer.
void refuse_unsupported(const Json& body) {
  if (optional_bool(body, "background").value_or(false))
    throw invalid_request("'background' responses are not supported", "background");
  for (const char* name : {"conversation", "prompt"})
    if (present(body, name))
      throw invalid_request("'" + std::string(name) + "' is not supported", name);
}

Json echoes_of(const Json& body, const CompletionRequest& request, bool store) {
  const auto& sampler = request.text.options.sampler;
  Json text = present(body, "text") ? body["text"] : Json::object();
  if (!present(text, "format")) text["format"] = {{"type", "text"}};
  Json reasoning = {{"effort", nullptr}, {"summary", nullptr}};
  if (present(body, "reasoning"))
    for (auto& [key, value] : body["reasoning"].items()) reasoning[key] = value;
  auto given = [&body](const char* name, Json otherwise) {
    return present(body, name) ? body[name] : otherwise;
  };
  return {{"instructions", given("instructions", nullptr)},
          {"max_output_tokens", given("max_output_tokens", nullptr)},
          {"parallel_tool_calls", request.parallel_tool_calls},
          {"previous_response_id", given("previous_response_id", nullptr)},
          {"reasoning", std::move(reasoning)},
          {"store", store},
          {"temperature", sampler.temperature},
          {"text", std::move(text)},
          {"tool_choice", given("tool_choice", "auto")},
          {"tools", given("tools", Json::array())},
          {"top_p", sampler.top_p},
          {"truncation", "disabled"},
          {"user", given("user", nullptr)},
          {"metadata", given("metadata", Json::object())}};
}

}  // namespace

ResponsesChatBody responses_chat_body(const Json& body, const Json& previous_items) {
  refuse_unsupported(body);
  Json conversation = previous_items.is_array() ? previous_items : Json::array();
  const size_t own_from = conversation.size();
  for (const auto& item : input_items(body)) conversation.push_back(item);
  // Instructions are this request's only: a follow-up does not inherit them.
  ConversationBuilder builder(instructions_messages(body));
  for (size_t i = 0; i < conversation.size(); ++i)
    builder.add(conversation[i],
                i < own_from ? "previous_response_id" : field("input", i - own_from));
  Json chat = {{"messages", builder.take_messages()}};
  if (auto model = optional_string(body, "model")) chat["model"] = *model;
  if (body.contains("adapter")) chat["adapter"] = body["adapter"];
  if (auto limit = optional_integer(body, "max_output_tokens", 1))
    chat["max_completion_tokens"] = *limit;
  // Same names and meaning; parse_chat_request checks their values.
  for (const char* name : {"temperature", "top_p", "stream", "parallel_tool_calls", "user"})
    if (present(body, name)) chat[name] = body[name];
  if (present(body, "tools")) chat["tools"] = translate_tools(body["tools"]);
  if (present(body, "tool_choice"))
    chat["tool_choice"] = translate_tool_choice(body["tool_choice"]);
  if (present(body, "text"))
    if (auto format = translate_text_format(body["text"]); !format.is_null())
      chat["response_format"] = std::move(format);
  if (auto effort = reasoning_effort(body)) chat["reasoning_effort"] = *effort;
  optional_object(body, "metadata");  // accepted, kept with the response
  return {std::move(chat), std::move(conversation)};
}

ResponsesRequest parse_responses_request(const Json& body, const ModelInfo& model,
                                         const ResponsesStore& store) {
  Json previous_items = Json::array();
  if (auto previous_id = optional_string(body, "previous_response_id")) {
    auto previous = store.find(*previous_id);
    if (!previous)
      throw invalid_request("'previous_response_id' names no stored response: \"" + *previous_id +
                                "\" (responses are kept with store: true, in memory)",
                            "previous_response_id");
    previous_items = std::move(previous->conversation);
  }
  auto translated = responses_chat_body(body, previous_items);
  ResponsesRequest request;
  request.completion = parse_chat_request(translated.chat, model);
  request.conversation = std::move(translated.conversation);
  request.store = optional_bool(body, "store").value_or(true);
  request.echoes = echoes_of(body, request.completion, request.store);
  return request;
}

}  // namespace mlx_cpp::server
