#include "server/chat_request.h"

#include <functional>
#include <set>

#include "chat/forced_tool_calls.h"
#include "chat/json_scan.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

std::string field(const std::string& parent, size_t index, const std::string& name = "") {
  return parent + "[" + std::to_string(index) + "]" + (name.empty() ? "" : "." + name);
}

// Text content parts are joined; other part types are refused by name.
std::string message_text(const nlohmann::ordered_json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw invalid_request("'" + param + "' must be a string or a list of content parts", param);
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string())
      throw invalid_request("'" + param + "': only text content parts are supported", param);
    text += part["text"].get<std::string>();
  }
  return text;
}

// An id the template can take: Mistral's refuse any but 9 alphanumerics,
// so other ids are mapped to such a one, the same for a call and its result.
std::string id_for_template(const std::string& id, chat::CallIdStyle style) {
  if (style != chat::CallIdStyle::nine_letters) return id;
  bool fits = id.size() == 9;
  for (char c : id) fits = fits && std::isalnum(static_cast<unsigned char>(c));
  if (fits) return id;
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  size_t hash = std::hash<std::string>{}(id);
  std::string mapped;
  for (int i = 0; i < 9; ++i, hash /= 62) mapped += alphabet[hash % 62];
  return mapped;
}

// An assistant turn's tool_calls; string arguments holding a JSON object
// become that object, as vLLM and llama.cpp give them to templates (many
// iterate over them).
nlohmann::ordered_json parse_tool_calls(const nlohmann::ordered_json& calls,
                                        const std::string& param, chat::CallIdStyle style,
                                        std::set<std::string>& open_ids) {
  if (!calls.is_array()) throw invalid_request("'" + param + "' must be a list", param);
  auto parsed = nlohmann::ordered_json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    auto call = calls[i];
    const std::string name = field(param, i);
    if (!call.is_object()) throw invalid_request("'" + name + "' must be an object", name);
    auto function = call.find("function");
    if (function == call.end() || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string())
      throw invalid_request("'" + name + ".function.name' must be a string",
                            name + ".function.name");
    auto arguments = function->find("arguments");
    if (arguments != function->end() && arguments->is_string()) {
      const auto& text = arguments->get_ref<const std::string&>();
      refuse_deep_json(text, "'" + name + ".function.arguments'", name + ".function.arguments");
      auto object = nlohmann::ordered_json::parse(text, nullptr, false);
      if (object.is_discarded())
        throw invalid_request("'" + name + ".function.arguments' is not valid JSON",
                              name + ".function.arguments");
      if (object.is_object()) *arguments = object;
    }
    if (call.contains("id")) {
      if (!call["id"].is_string()) throw invalid_request("'" + name + ".id' must be a string");
      open_ids.insert(call["id"].get<std::string>());
      call["id"] = id_for_template(call["id"].get<std::string>(), style);
    }
    parsed.push_back(std::move(call));
  }
  return parsed;
}

nlohmann::ordered_json parse_messages(const nlohmann::ordered_json& body, chat::CallIdStyle style) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    throw invalid_request("'messages' must be a non-empty list", "messages");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::set<std::string> call_ids;  // ids of the calls made so far
  bool calls_made = false;
  for (size_t i = 0; i < it->size(); ++i) {
    nlohmann::ordered_json message = (*it)[i];
    const std::string param = field("messages", i);
    if (!message.is_object()) throw invalid_request("'" + param + "' must be an object", param);
    if (!message.contains("role") || !message["role"].is_string())
      throw invalid_request("'" + param + ".role' must be a string", param + ".role");
    const std::string role = message["role"];
    const bool has_calls = message.contains("tool_calls") && !message["tool_calls"].is_null();
    if (message.contains("content") && !message["content"].is_null())
      message["content"] = message_text(message["content"], param + ".content");
    else if (!has_calls)
      throw invalid_request("'" + param + ".content' is required", param + ".content");
    if (has_calls) {
      if (role != "assistant")
        throw invalid_request("'" + param + ".tool_calls' is only for assistant messages",
                              param + ".tool_calls");
      message["tool_calls"] =
          parse_tool_calls(message["tool_calls"], param + ".tool_calls", style, call_ids);
      calls_made = true;
    }
    if (role == "tool") {
      auto id = message.find("tool_call_id");
      if (!calls_made || (id != message.end() && id->is_string() && !call_ids.count(*id)))
        throw invalid_request("'" + param +
                                  "' is a tool result with no matching assistant tool call before "
                                  "it (tool_call_id must name one)",
                              param);
      if (id != message.end() && id->is_string())
        *id = id_for_template(id->get<std::string>(), style);
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

// OpenAI's tools: [{"type": "function", "function": {"name", "description", "parameters"}}].
nlohmann::ordered_json parse_tools(const nlohmann::ordered_json& body) {
  auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) return nullptr;
  if (!tools->is_array()) throw invalid_request("'tools' must be a list", "tools");
  std::set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) {
    const auto& tool = (*tools)[i];
    const std::string param = field("tools", i);
    if (!tool.is_object() || tool.value("type", "function") != "function")
      throw invalid_request("'" + param + "' must be {\"type\": \"function\", \"function\": ...}",
                            param);
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string() || (*function)["name"].get<std::string>().empty())
      throw invalid_request("'" + param + ".function.name' must be a non-empty string",
                            param + ".function.name");
    if (function->contains("parameters") && !(*function)["parameters"].is_object() &&
        !(*function)["parameters"].is_null())
      throw invalid_request("'" + param + ".function.parameters' must be a JSON schema object",
                            param + ".function.parameters");
    if (!names.insert((*function)["name"].get<std::string>()).second)
      throw invalid_request(
          "'" + param + "': two tools are named '" + (*function)["name"].get<std::string>() + "'",
          param);
  }
  return tools->empty() ? nlohmann::ordered_json(nullptr) : *tools;
}

void parse_tool_choice(const nlohmann::ordered_json& body, CompletionRequest& request) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return;
  const auto& tools = request.tools;
  if (it->is_string() && (*it == "auto" || *it == "none" || *it == "required")) {
    request.tool_choice = *it == "auto"   ? ToolChoice::automatic
                          : *it == "none" ? ToolChoice::none
                                          : ToolChoice::required;
    if (request.tool_choice == ToolChoice::required && !tools.is_array())
      throw invalid_request("'tool_choice' is required but 'tools' offers none", "tool_choice");
    return;
  }
  if (it->is_object() && it->value("type", "") == "function" && it->contains("function") &&
      (*it)["function"].is_object() && (*it)["function"].contains("name") &&
      (*it)["function"]["name"].is_string()) {
    const std::string name = (*it)["function"]["name"];
    bool offered = false;
    if (tools.is_array())
      for (const auto& tool : tools) offered = offered || tool["function"]["name"] == name;
    if (!offered)
      throw invalid_request("'tool_choice' names \"" + name + "\", which is not in 'tools'",
                            "tool_choice");
    request.tool_choice = ToolChoice::named;
    request.tool_choice_name = name;
    return;
  }
  throw invalid_request(
      "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": "
      "{\"name\": ...}}",
      "tool_choice");
}

// tool_choice required or named: a grammar that lets the model write only
// calls, in its own format, from its first token.
void force_tool_calls(const nlohmann::ordered_json& body, const ModelInfo& model,
                      CompletionRequest& request) {
  const bool named = request.tool_choice == ToolChoice::named;
  if (!named && request.tool_choice != ToolChoice::required) return;
  if (request.grammar)
    throw invalid_request(
        "'tool_choice' required or named cannot be combined with a structured output format",
        "tool_choice");
  const auto* format = model.output_format.tool_calls;
  chat::ForcedCalls forced;
  if (named) forced.only_tool = request.tool_choice_name;
  // Several forced calls only when the client asks for them by name: a
  // grammar that allows more calls lets small models write them until
  // max_tokens.
  forced.several = !named && optional_bool(body, "parallel_tool_calls").value_or(false);
  auto tag = chat::forced_calls_structural_tag(model.output_format, request.tools, forced);
  if (!tag)
    throw invalid_request(
        "'tool_choice' required or named needs calls a grammar can write; this "
        "model's format (" +
            std::string(format ? format->name() : "none") + ") has no grammar for them: use auto",
        "tool_choice");
  request.grammar = grammar::GrammarSpec{grammar::GrammarSpec::Kind::structural_tag, *tag};
  request.grammar_field = "tool_choice";
}

// reasoning_effort: "none" turns thinking off through the templates'
// enable_thinking switch; every level is also passed as reasoning_effort
// for templates that read it (gpt-oss). chat_template_kwargs win.
void apply_reasoning_effort(const nlohmann::ordered_json& body, nlohmann::ordered_json& kwargs) {
  auto effort = optional_string(body, "reasoning_effort");
  if (!effort) return;
  static const std::set<std::string> levels = {"none", "minimal", "low", "medium", "high"};
  if (!levels.count(*effort))
    throw invalid_request("'reasoning_effort' must be none, minimal, low, medium or high",
                          "reasoning_effort");
  if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = *effort;
  if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = *effort != "none";
}

}  // namespace

void parse_chat_fields(const nlohmann::ordered_json& body, const ModelInfo& model,
                       CompletionRequest& request) {
  const auto* format = model.output_format.tool_calls;
  request.messages = parse_messages(body, format ? format->id_style() : chat::CallIdStyle::openai);
  request.tools = parse_tools(body);
  parse_tool_choice(body, request);
  force_tool_calls(body, model, request);
  request.parallel_tool_calls = optional_bool(body, "parallel_tool_calls").value_or(true);
  request.template_kwargs = optional_object(body, "chat_template_kwargs");
  apply_reasoning_effort(body, request.template_kwargs);
  if (auto budget = optional_integer(body, "thinking_token_budget", -1, 1 << 30))
    request.thinking_budget = static_cast<int>(*budget);  // -1: no limit
}

}  // namespace mlx_cpp::server
