#include "server/anthropic_request.h"

#include <set>
#include <string>

#include "server/api_error.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

using Json = nlohmann::ordered_json;

std::string field(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string block_type(const Json& block) {
  return block.is_object() && block.contains("type") && block["type"].is_string()
             ? block["type"].get<std::string>()
             : std::string();
}

std::string text_of(const Json& block, const std::string& param) {
  if (!block.contains("text") || !block["text"].is_string())
    throw invalid_request("'" + param + ".text' must be a string", param + ".text");
  return block["text"].get<std::string>();
}

[[noreturn]] void refuse_block(const Json& block, const std::string& param,
                               const std::string& allowed) {
  const auto type = block_type(block);
  if (type.empty())
    throw invalid_request("'" + param + "' must be a content block with a string 'type'", param);
  throw invalid_request("'" + param + "': content blocks of type '" + type +
                            "' are not supported here (" + allowed + ")",
                        param);
}

// A string, or a list of text blocks joined (system prompts, tool results).
std::string joined_text(const Json& value, const std::string& param) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array())
    throw invalid_request("'" + param + "' must be a string or a list of text blocks", param);
  std::string text;
  for (size_t i = 0; i < value.size(); ++i) {
    if (block_type(value[i]) != "text") refuse_block(value[i], field(param, i), "only text");
    text += text_of(value[i], field(param, i));
  }
  return text;
}

// Block lists of one turn; a plain string is one text block.
Json content_blocks(const Json& message, const std::string& param) {
  auto content = message.find("content");
  if (content == message.end() || content->is_null())
    throw invalid_request("'" + param + ".content' is required", param + ".content");
  if (content->is_string()) return Json::array({{{"type", "text"}, {"text", *content}}});
  if (!content->is_array())
    throw invalid_request("'" + param + ".content' must be a string or a list of content blocks",
                          param + ".content");
  return *content;
}

// An assistant turn: text joined, thinking as reasoning_content, tool_use
// blocks as OpenAI tool_calls whose arguments are the input's JSON text.
Json assistant_message(const Json& blocks, const std::string& param, std::set<std::string>& ids) {
  std::string text, reasoning;
  auto calls = Json::array();
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& block = blocks[i];
    const auto name = field(param, i);
    const auto type = block_type(block);
    if (type == "text") {
      text += text_of(block, name);
    } else if (type == "thinking") {
      if (!block.contains("thinking") || !block["thinking"].is_string())
        throw invalid_request("'" + name + ".thinking' must be a string", name + ".thinking");
      reasoning += block["thinking"].get<std::string>();
    } else if (type == "tool_use") {
      for (const char* key : {"id", "name"})
        if (!block.contains(key) || !block[key].is_string() ||
            block[key].get<std::string>().empty())
          throw invalid_request("'" + name + "." + key + "' must be a non-empty string",
                                name + "." + key);
      if (!block.contains("input") || !block["input"].is_object())
        throw invalid_request("'" + name + ".input' must be an object", name + ".input");
      ids.insert(block["id"].get<std::string>());
      calls.push_back(
          {{"id", block["id"]},
           {"type", "function"},
           {"function", {{"name", block["name"]}, {"arguments", block["input"].dump()}}}});
    } else {
      refuse_block(block, name, "assistant turns take text, thinking and tool_use");
    }
  }
  Json message = {{"role", "assistant"}, {"content", text}};
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  return message;
}

// A user turn: each tool_result becomes an OpenAI "tool" message, the text
// between them user messages, in their order. Templates have no error flag,
// so an is_error result says so in its text.
void add_user_messages(const Json& blocks, const std::string& param,
                       const std::set<std::string>& ids, Json& messages) {
  std::string text;
  bool has_text = false;
  auto flush_text = [&] {
    if (has_text) messages.push_back({{"role", "user"}, {"content", text}});
    text.clear();
    has_text = false;
  };
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& block = blocks[i];
    const auto name = field(param, i);
    const auto type = block_type(block);
    if (type == "text") {
      text += text_of(block, name);
      has_text = true;
      continue;
    }
    if (type != "tool_result") refuse_block(block, name, "user turns take text and tool_result");
    auto id = block.find("tool_use_id");
    if (id == block.end() || !id->is_string())
      throw invalid_request("'" + name + ".tool_use_id' must be a string", name + ".tool_use_id");
    if (!ids.count(*id))
      throw invalid_request("'" + name + "' is a tool_result whose tool_use_id \"" +
                                id->get<std::string>() + "\" matches no tool_use before it",
                            name + ".tool_use_id");
    std::string result;
    if (block.contains("content") && !block["content"].is_null())
      result = joined_text(block["content"], name + ".content");
    auto is_error = optional_bool(block, "is_error");
    if (is_error.value_or(false)) result = "Error: " + result;
    flush_text();
    messages.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
  }
  flush_text();
}

Json translate_messages(const Json& body) {
  auto messages = Json::array();
  if (body.contains("system") && !body["system"].is_null())
    messages.push_back({{"role", "system"}, {"content", joined_text(body["system"], "system")}});
  auto turns = body.find("messages");
  if (turns == body.end() || !turns->is_array() || turns->empty())
    throw invalid_request("'messages' must be a non-empty list", "messages");
  std::set<std::string> call_ids;  // tool_use ids seen so far
  for (size_t i = 0; i < turns->size(); ++i) {
    const auto& turn = (*turns)[i];
    const auto param = field("messages", i);
    if (!turn.is_object()) throw invalid_request("'" + param + "' must be an object", param);
    const auto role = optional_string(turn, "role").value_or("");
    const auto blocks = content_blocks(turn, param);
    if (role == "assistant") {
      // The API lets a last assistant turn be continued (a prefill); the
      // chat templates here would close it and start another instead.
      if (i + 1 == turns->size())
        throw invalid_request("'" + param +
                                  "': a final assistant turn (prefill) is not supported; end "
                                  "with a user turn",
                              param);
      messages.push_back(assistant_message(blocks, param + ".content", call_ids));
    } else if (role == "user") {
      add_user_messages(blocks, param + ".content", call_ids, messages);
    } else {
      throw invalid_request("'" + param + ".role' must be user or assistant", param + ".role");
    }
  }
  return messages;
}

// [{name, description, input_schema}]: custom tools only (the API's
// server tools, such as web search, run on Anthropic's side).
Json translate_tools(const Json& tools) {
  if (!tools.is_array()) throw invalid_request("'tools' must be a list", "tools");
  auto translated = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const auto& tool = tools[i];
    const auto param = field("tools", i);
    if (!tool.is_object()) throw invalid_request("'" + param + "' must be an object", param);
    const auto type = optional_string(tool, "type").value_or("custom");
    if (type != "custom")
      throw invalid_request("'" + param + "': tools of type '" + type +
                                "' are not supported (only custom tools with an input_schema)",
                            param + ".type");
    const auto name = optional_string(tool, "name");
    if (!name || name->empty())
      throw invalid_request("'" + param + ".name' must be a non-empty string", param + ".name");
    if (!tool.contains("input_schema") || !tool["input_schema"].is_object())
      throw invalid_request("'" + param + ".input_schema' must be a JSON schema object",
                            param + ".input_schema");
    Json function = {{"name", *name}};
    if (auto description = optional_string(tool, "description"))
      function["description"] = *description;
    function["parameters"] = tool["input_schema"];
    translated.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return translated;
}

// {type: auto | any | tool (name) | none} as OpenAI's auto, required, named
// and none; disable_parallel_tool_use as parallel_tool_calls false.
void translate_tool_choice(const Json& choice, Json& openai) {
  if (!choice.is_object())
    throw invalid_request("'tool_choice' must be an object with a 'type'", "tool_choice");
  const auto type = optional_string(choice, "type").value_or("");
  if (type == "auto") {
    openai["tool_choice"] = "auto";
  } else if (type == "any") {
    openai["tool_choice"] = "required";
  } else if (type == "none") {
    openai["tool_choice"] = "none";
  } else if (type == "tool") {
    const auto name = optional_string(choice, "name");
    if (!name) throw invalid_request("'tool_choice.name' must name a tool", "tool_choice.name");
    openai["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    throw invalid_request("'tool_choice.type' must be auto, any, tool or none", "tool_choice.type");
  }
  if (auto disable = optional_bool(choice, "disable_parallel_tool_use"))
    openai["parallel_tool_calls"] = !*disable;
}

// thinking {type: enabled, budget_tokens} or {type: disabled} switch the
// templates' enable_thinking; adaptive leaves the template's own default.
// budget_tokens becomes the request's thinking budget: the engine ends the
// think block when it is spent.
void translate_thinking(const Json& thinking, Json& openai) {
  if (!thinking.is_object())
    throw invalid_request("'thinking' must be an object with a 'type'", "thinking");
  const auto type = optional_string(thinking, "type").value_or("");
  if (type == "enabled") {
    if (!optional_integer(thinking, "budget_tokens", 1))
      throw invalid_request("'thinking.budget_tokens' is required when thinking is enabled",
                            "thinking.budget_tokens");
    openai["chat_template_kwargs"]["enable_thinking"] = true;
    openai["thinking_token_budget"] = thinking["budget_tokens"];
  } else if (type == "disabled") {
    openai["chat_template_kwargs"]["enable_thinking"] = false;
  } else if (type != "adaptive") {
    throw invalid_request("'thinking.type' must be enabled, disabled or adaptive", "thinking.type");
  }
}

Json translate_stop_sequences(const Json& stops) {
  if (!stops.is_array())
    throw invalid_request("'stop_sequences' must be a list of strings", "stop_sequences");
  for (const auto& stop : stops)
    if (!stop.is_string())
      throw invalid_request("'stop_sequences' must contain only strings", "stop_sequences");
  return stops;
}

bool present(const Json& body, const char* name) {
  return body.contains(name) && !body[name].is_null();
}

}  // namespace

Json openai_chat_body(const Json& body, AnthropicRoute route) {
  Json openai = {{"messages", translate_messages(body)}};
  if (auto model = optional_string(body, "model")) openai["model"] = *model;
  if (body.contains("adapter")) openai["adapter"] = body["adapter"];
  if (route == AnthropicRoute::messages) {
    if (!present(body, "max_tokens"))
      throw invalid_request("'max_tokens' is required", "max_tokens");
    if (!body["max_tokens"].is_number_integer())
      throw invalid_request("'max_tokens' must be an integer", "max_tokens");
    openai["max_tokens"] = body["max_tokens"];
  }
  // Sampling fields share their names and meaning; parse_chat_request
  // checks their ranges.
  for (const char* name : {"temperature", "top_p", "top_k", "stream"})
    if (present(body, name)) openai[name] = body[name];
  if (present(body, "stop_sequences"))
    openai["stop"] = translate_stop_sequences(body["stop_sequences"]);
  if (present(body, "tools")) openai["tools"] = translate_tools(body["tools"]);
  if (present(body, "tool_choice")) translate_tool_choice(body["tool_choice"], openai);
  if (present(body, "thinking")) translate_thinking(body["thinking"], openai);
  optional_object(body, "metadata");  // accepted (user_id), unused
  return openai;
}

CompletionRequest parse_anthropic_request(const Json& body, const ModelInfo& model,
                                          AnthropicRoute route) {
  return parse_chat_request(openai_chat_body(body, route), model);
}

}  // namespace mlx_cpp::server
