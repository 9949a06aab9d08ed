#include "template/python_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/value.h"

namespace mlx_cpp::jinja {
namespace {

// Code points str.isprintable() rejects beyond the C0/C1 controls: the
// separators and format characters that real text carries (a subset of
// Unicode's Z* and Cf categories).
bool is_python_unprintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) return true;
  if ((c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return true;
  if ((c >= 0x205f && c <= 0x2064) || c == 0x3000 || c == 0xfeff) return true;
  return c >= 0xd800 && c <= 0xdfff;
}

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%0*x", digits, value);
  out += prefix;
  out += buffer;
}

void append_json_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  for (char32_t c : utf8_decode(text)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      append_hex(out, "\\u", c, 4);
    } else if (ensure_ascii && c > 0x7e) {
      if (c >= 0x10000) {
        char32_t v = c - 0x10000;
        append_hex(out, "\\u", 0xd800 + (v >> 10), 4);
        append_hex(out, "\\u", 0xdc00 + (v & 0x3ff), 4);
      } else {
        append_hex(out, "\\u", c, 4);
      }
    } else {
      utf8_append(out, c);
    }
  }
  out += '"';
}

std::string json_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(value);
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options) : options_(options) {
    if (options.indent_text) {
      indent_unit_ = *options.indent_text;
      indented_ = true;
    } else if (options.indent) {
      ensure_room_for(static_cast<size_t>(std::max(0, *options.indent)));
      indent_unit_ = std::string(static_cast<size_t>(std::max(0, *options.indent)), ' ');
      indented_ = true;
    }
  }

  void write(const Value& value, int depth) {
    // Containers nest at most kMaxContainerDepth: no cycle reaches here.
    if (depth > kMaxContainerDepth) throw TemplateFailure("tojson: value nested too deeply");
    switch (value.kind()) {
      case Value::Kind::None:
        out += "null";
        return;
      case Value::Kind::Boolean:
        out += value.as_boolean() ? "true" : "false";
        return;
      case Value::Kind::Integer:
        out += std::to_string(value.as_integer());
        return;
      case Value::Kind::Float:
        out += json_float(value.as_double());
        return;
      case Value::Kind::String:
        append_json_string(out, value.as_string(), options_.ensure_ascii);
        return;
      case Value::Kind::List:
        write_list(value.as_list(), depth);
        return;
      case Value::Kind::Dict:
        if (!value.is_namespace()) {
          write_dict(value.as_dict(), depth);
          return;
        }
        break;
      default:
        break;
    }
    throw TemplateFailure("Object of type " + value.type_name() + " is not JSON serializable");
  }

  std::string out;

 private:
  // Shared lists and wide indents can write far more than a value holds,
  // so the text is checked against the render's budget as it grows.
  void newline(int depth) {
    ensure_room_for(out.size() + 1 + bytes_times(static_cast<size_t>(depth), indent_unit_.size()));
    out += '\n';
    for (int i = 0; i < depth; ++i) out += indent_unit_;
  }

  void write_list(const ListObject& list, int depth) {
    if (list.items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < list.items.size(); ++i) {
      if (i > 0) out += options_.item_separator;
      if (indented_) newline(depth + 1);
      write(list.items[i], depth + 1);
      ensure_room_for(out.size());
    }
    if (indented_) newline(depth);
    out += ']';
  }

  void write_dict(const DictObject& dict, int depth) {
    if (dict.entries.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries) entries.push_back(&entry);
    if (options_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto* a, auto* b) { return values_less(a->first, b->first); });
    }
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += options_.item_separator;
      if (indented_) newline(depth + 1);
      write_key(entries[i]->first);
      out += options_.key_separator;
      write(entries[i]->second, depth + 1);
      ensure_room_for(out.size());
    }
    if (indented_) newline(depth);
    out += '}';
  }

  // json.dumps turns int, float, bool and None keys into strings.
  void write_key(const Value& key) {
    if (key.is_string()) {
      append_json_string(out, key.as_string(), options_.ensure_ascii);
      return;
    }
    std::string text;
    if (key.is_boolean())
      text = key.as_boolean() ? "true" : "false";
    else if (key.is_none())
      text = "null";
    else if (key.is_integer())
      text = std::to_string(key.as_integer());
    else if (key.is_float())
      text = json_float(key.as_double());
    else
      throw TemplateFailure("keys must be str, int, float, bool or None, not " + key.type_name());
    append_json_string(out, text, false);
  }

  const JsonDumpOptions& options_;
  std::string indent_unit_;
  bool indented_ = false;
};

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "d.ddde±XX".
  char buffer[64];
  auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string scientific(buffer, result.ptr);
  size_t e_position = scientific.find('e');
  std::string mantissa = scientific.substr(0, e_position);
  int exponent = std::stoi(scientific.substr(e_position + 1));
  bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  // Python switches to exponent form below 1e-4 and from 1e16 up.
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof(exponent_text), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exponent_text;
  }
  if (exponent < 0) {
    return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  }
  size_t integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    return out + digits + std::string(integer_digits - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
}

std::string python_string_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8_decode(text)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_python_unprintable(c)) {
      if (c < 0x100)
        append_hex(out, "\\x", c, 2);
      else
        append_hex(out, "\\u", c, 4);
    } else {
      utf8_append(out, c);
    }
  }
  out += quote;
  return out;
}

std::string python_json_dumps(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  writer.write(value, 0);
  return writer.out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

std::u32string utf8_decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    int length = byte < 0x80           ? 1
                 : (byte >> 5) == 0x6  ? 2
                 : (byte >> 4) == 0xe  ? 3
                 : (byte >> 3) == 0x1e ? 4
                                       : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text.size()) {
      out += U'\uFFFD';
      ++i;
      continue;
    }
    char32_t c = length == 1 ? byte : byte & (0x7f >> length);
    bool valid = true;
    for (int k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((next & 0xc0) != 0x80) valid = false;
      c = (c << 6) | (next & 0x3f);
    }
    if (!valid) {
      out += U'\uFFFD';
      ++i;
      continue;
    }
    out += c;
    i += static_cast<size_t>(length);
  }
  return out;
}

std::string utf8_encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) utf8_append(out, c);
  return out;
}

size_t utf8_length(std::string_view text) {
  size_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++count;
  }
  return count;
}

}  // namespace mlx_cpp::jinja
