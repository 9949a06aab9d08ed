#pragma once
// tool_choice "required" and a named function, enforced: a structural tag
// (xgrammar's description of tagged output) that lets the model write only
// calls in its own format, from its first token, to the allowed tools, with
// arguments that satisfy each tool's JSON schema.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/output_format.h"

namespace mlx_cpp::chat {

struct ForcedCalls {
  std::optional<std::string> only_tool;  // named: this tool; otherwise any offered one
  bool several = true;                   // parallel_tool_calls: one call or more
};

// The structural tag JSON, or nullopt when the model's format cannot be
// written by a grammar (or it has none). tools: OpenAI's list.
std::optional<std::string> forced_calls_structural_tag(const OutputFormat& format,
                                                       const nlohmann::ordered_json& tools,
                                                       const ForcedCalls& forced);

}  // namespace mlx_cpp::chat
