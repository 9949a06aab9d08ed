#pragma once
// Checked access to tokenizer.json fields: a missing or mistyped field
// throws Error naming the component and the field instead of nlohmann's
// generic type_error.
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/regex.h"

namespace mlx_cpp {

// The "type" of a component; `what` names the component kind in messages.
std::string type_field(const nlohmann::json& spec, const std::string& what);
std::string string_field(const nlohmann::json& spec, const std::string& key,
                         const std::string& what);
const nlohmann::json& array_field(const nlohmann::json& spec, const std::string& key,
                                  const std::string& what);
bool bool_field(const nlohmann::json& spec, const std::string& key, bool fallback,
                const std::string& what);
// A single character field (Metaspace replacement, Strip content).
std::string char_field(const nlohmann::json& spec, const std::string& key, const std::string& what);

// A {"String": s} or {"Regex": r} pattern as regex source text.
std::string pattern_regex(const nlohmann::json& spec, const std::string& what);

// Replaces every match of pattern in text with replacement (literal).
std::string replace_all(const Regex& pattern, const std::string& text,
                        const std::string& replacement);

}  // namespace mlx_cpp
