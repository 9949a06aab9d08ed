#pragma once
// Python's text conventions that templates make visible: repr() of floats
// and strings, json.dumps as transformers' tojson calls it, and strings
// indexed by code point rather than by byte.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/template_error.h"

namespace mlx_cpp::jinja {

class Value;

// repr(float): shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf".
std::string python_float_repr(double value);
// repr(str): single quotes unless the text holds ' and no ".
std::string python_string_repr(std::string_view text);

struct JsonDumpOptions {
  std::optional<int> indent;               // None: one line
  std::optional<std::string> indent_text;  // indent given as a string
  std::string item_separator = ", ";       // "," when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
// json.dumps(value, ...) with Python's float and string formatting.
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options);

// UTF-8 <-> code points. Invalid bytes decode as U+FFFD one byte at a time.
std::u32string utf8_decode(std::string_view text);
std::string utf8_encode(std::u32string_view code_points);
void utf8_append(std::string& out, char32_t code_point);
size_t utf8_length(std::string_view text);

}  // namespace mlx_cpp::jinja
