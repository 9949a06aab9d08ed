#pragma once
// Pieces of xgrammar structural tags, for formats that describe how they
// write a forced call. A marker is markup that may be one token of the
// vocabulary ([TOOL_CALLS], <|tool_call_begin|>): the grammar layer
// resolves it to that token, or to its text where the vocabulary has no
// such token (grammar::GrammarVocabulary::compile).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_call_format.h"

namespace mlx_cpp::chat::call_grammar {

using Json = nlohmann::ordered_json;

Json text(std::string value);    // exactly this text
Json marker(std::string value);  // a token, or its text
Json pattern(std::string regex);
// Arguments valid against `schema`, written in `style` (xgrammar's json,
// qwen_xml, glm_xml, deepseek_xml, ...).
Json arguments(const Json& schema, std::string style = "json");
Json sequence(std::vector<Json> parts);
Json one_of(std::vector<Json> choices);  // the only choice when there is one
// A call to any of the tools, each written by `call`.
Json any_tool(const std::vector<ForcedTool>& tools,
              const std::function<Json(const ForcedTool&)>& call);
// One call, or with `several` one or more, `separator` (may be null)
// between them.
Json calls(Json call, const Json& separator, bool several);

// A name as it appears inside a JSON string literal.
std::string json_string_body(std::string_view text);

}  // namespace mlx_cpp::chat::call_grammar
