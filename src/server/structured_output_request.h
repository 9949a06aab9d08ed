#pragma once
// The request fields that hold output to a grammar, in the shapes clients
// send them (docs/server.md): OpenAI's response_format (json_object,
// json_schema), vLLM's structured_outputs {json, regex, choice, grammar,
// json_object} and its older guided_* fields, and llama.cpp's grammar and
// json_schema. At most one may be given.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "grammar/token_grammar.h"

namespace mlx_cpp::server {

struct StructuredOutput {
  grammar::GrammarSpec spec;
  std::string field;  // where the request gave it, for errors
};

// Throws ApiError (400) naming the field for a malformed or second grammar.
std::optional<StructuredOutput> parse_structured_output(const nlohmann::ordered_json& body);

}  // namespace mlx_cpp::server
