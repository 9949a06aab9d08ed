#include "chat/forced_tool_calls.h"

namespace mlx_cpp::chat {

std::optional<std::string> forced_calls_structural_tag(const OutputFormat& format,
                                                       const nlohmann::ordered_json& tools,
                                                       const ForcedCalls& forced) {
  if (!format.tool_calls) return std::nullopt;
  CallForcing forcing;
  forcing.several = forced.several;
  forcing.rendered_call = format.rendered_call;
  for (const auto& tool : tools) {
    const auto& function = tool["function"];
    const std::string name = function["name"];
    if (forced.only_tool && *forced.only_tool != name) continue;
    nlohmann::ordered_json schema = nlohmann::ordered_json{{"type", "object"}};
    if (function.contains("parameters") && function["parameters"].is_object())
      schema = function["parameters"];
    forcing.tools.push_back({name, std::move(schema)});
  }
  auto structure = format.tool_calls->forced_calls(forcing);
  if (!structure) return std::nullopt;
  return nlohmann::ordered_json{{"type", "structural_tag"}, {"format", std::move(*structure)}}
      .dump();
}

}  // namespace mlx_cpp::chat
