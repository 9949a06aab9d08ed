#include "chat/call_grammar.h"

namespace mlx_cpp::chat::call_grammar {

Json text(std::string value) {
  return {{"type", "const_string"}, {"value", std::move(value)}};
}

// The grammar layer reads type "token" with a string as a marker.
Json marker(std::string value) {
  return {{"type", "token"}, {"token", std::move(value)}};
}

Json pattern(std::string regex) {
  return {{"type", "regex"}, {"pattern", std::move(regex)}};
}

Json arguments(const Json& schema, std::string style) {
  // At most one whitespace character in a row: with any amount allowed,
  // small models fill max_tokens with whitespace between arguments (and,
  // in the XML styles, around values).
  return {{"type", "json_schema"},
          {"json_schema", schema},
          {"style", std::move(style)},
          {"max_whitespace_cnt", 1}};
}

Json sequence(std::vector<Json> parts) {
  return {{"type", "sequence"}, {"elements", std::move(parts)}};
}

Json one_of(std::vector<Json> choices) {
  if (choices.size() == 1) return std::move(choices.front());
  return {{"type", "or"}, {"elements", std::move(choices)}};
}

Json any_tool(const std::vector<ForcedTool>& tools,
              const std::function<Json(const ForcedTool&)>& call) {
  std::vector<Json> choices;
  for (const auto& tool : tools) choices.push_back(call(tool));
  return one_of(std::move(choices));
}

Json calls(Json call, const Json& separator, bool several) {
  if (!several) return call;
  Json more = separator.is_null() ? call : sequence({separator, call});
  return sequence({call, {{"type", "star"}, {"content", std::move(more)}}});
}

std::string json_string_body(std::string_view text) {
  const std::string quoted = nlohmann::ordered_json(std::string(text)).dump();
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace mlx_cpp::chat::call_grammar
