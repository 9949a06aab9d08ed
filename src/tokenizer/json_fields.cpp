#include "tokenizer/json_fields.h"

#include "io/error.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

const nlohmann::json& field(const nlohmann::json& spec, const std::string& key,
                            const std::string& what) {
  if (!spec.is_object()) throw Error("[tokenizer.json] " + what + " is not a JSON object");
  const auto it = spec.find(key);
  if (it == spec.end()) throw Error("[tokenizer.json] " + what + " lacks field '" + key + "'");
  return *it;
}

}  // namespace

std::string type_field(const nlohmann::json& spec, const std::string& what) {
  return string_field(spec, "type", what);
}

std::string string_field(const nlohmann::json& spec, const std::string& key,
                         const std::string& what) {
  const auto& value = field(spec, key, what);
  if (!value.is_string()) {
    throw Error("[tokenizer.json] " + what + " field '" + key + "' is not a string");
  }
  return value.get<std::string>();
}

const nlohmann::json& array_field(const nlohmann::json& spec, const std::string& key,
                                  const std::string& what) {
  const auto& value = field(spec, key, what);
  if (!value.is_array()) {
    throw Error("[tokenizer.json] " + what + " field '" + key + "' is not an array");
  }
  return value;
}

bool bool_field(const nlohmann::json& spec, const std::string& key, bool fallback,
                const std::string& what) {
  if (!spec.is_object()) throw Error("[tokenizer.json] " + what + " is not a JSON object");
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    throw Error("[tokenizer.json] " + what + " field '" + key + "' is not a boolean");
  }
  return it->get<bool>();
}

std::string char_field(const nlohmann::json& spec, const std::string& key,
                       const std::string& what) {
  std::string value = string_field(spec, key, what);
  if (value.empty() || utf8::char_length(value, 0) != value.size()) {
    throw Error("[tokenizer.json] " + what + " field '" + key + "' must be one character, got '" +
                value + "'");
  }
  return value;
}

std::string pattern_regex(const nlohmann::json& spec, const std::string& what) {
  const auto& pattern = field(spec, "pattern", what);
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    return Regex::escape(pattern["String"].get<std::string>());
  }
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
    return pattern["Regex"].get<std::string>();
  }
  throw Error("[tokenizer.json] " + what +
              " pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

std::string replace_all(const Regex& pattern, const std::string& text,
                        const std::string& replacement) {
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const auto& [begin, end] : pattern.find_all(text)) {
    out.append(text, previous, begin - previous);
    out += replacement;
    previous = end;
  }
  out.append(text, previous, std::string::npos);
  return out;
}

}  // namespace mlx_cpp
