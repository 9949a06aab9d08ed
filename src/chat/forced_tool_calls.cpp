#include "chat/forced_tool_calls.h"

namespace mlx_cpp::chat {
namespace {

// A name as it appears inside a JSON string literal.
std::string json_string_body(const std::string& text) {
  const std::string quoted = nlohmann::ordered_json(text).dump();
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

std::optional<std::string> forced_calls_structural_tag(const ToolCallFormat& format,
                                                       const nlohmann::ordered_json& tools,
                                                       const ForcedCalls& forced) {
  const auto call = format.call_template();
  if (!call) return std::nullopt;
  auto tags = nlohmann::ordered_json::array();
  for (const auto& tool : tools) {
    const auto& function = tool["function"];
    const std::string name = function["name"];
    if (forced.only_tool && *forced.only_tool != name) continue;
    nlohmann::ordered_json schema = nlohmann::ordered_json{{"type", "object"}};
    if (function.contains("parameters") && function["parameters"].is_object())
      schema = function["parameters"];
    tags.push_back(
        {{"type", "tag"},
         {"begin", call->before_name + json_string_body(name) + call->after_name},
         // At most one whitespace character in a row: with
         // any amount allowed, small models fill max_tokens
         // with whitespace between arguments.
         {"content", {{"type", "json_schema"}, {"json_schema", schema}, {"max_whitespace_cnt", 1}}},
         {"end", call->after_arguments}});
  }
  nlohmann::ordered_json structure = {{"type", "tags_with_separator"},
                                      {"tags", tags},
                                      {"separator", call->separator},
                                      {"at_least_one", true},
                                      {"stop_after_first", !forced.several}};
  return nlohmann::ordered_json{{"type", "structural_tag"}, {"format", structure}}.dump();
}

}  // namespace mlx_cpp::chat
