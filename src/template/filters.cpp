// jinja2's built-in filters over text and numbers, plus transformers' tojson.
// Filters over sequences are in filters_sequences.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "template/builtins.h"
#include "template/filter_helpers.h"
#include "template/python_text.h"
#include "template/string_functions.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

Value filter_default(const Value& input, const CallArguments& arguments) {
  Value fallback = optional_argument(arguments, 0, "default_value", Value(""));
  bool boolean = optional_argument(arguments, 1, "boolean", Value(false)).truthy();
  if (input.is_undefined() || (boolean && !input.truthy())) return fallback;
  return input;
}

Value filter_tojson(const Value& input, const CallArguments& arguments) {
  JsonDumpOptions options;
  options.ensure_ascii = optional_argument(arguments, 0, "ensure_ascii", Value(false)).truthy();
  Value indent = optional_argument(arguments, 1, "indent", Value());
  if (indent.is_string())
    options.indent_text = indent.as_string();
  else if (indent.is_number())
    options.indent = static_cast<int>(std::clamp<int64_t>(indent.as_integer(), 0, INT32_MAX));
  else if (!indent.is_none())
    throw TemplateFailure("tojson: indent must be an int or a string");
  if (!indent.is_none()) options.item_separator.assign(1, ',');  // json.dumps with indent
  Value separators = optional_argument(arguments, 2, "separators", Value());
  if (!separators.is_none()) {
    std::vector<Value> parts = iterate_values(separators);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string()) {
      throw TemplateFailure("tojson: separators must be two strings");
    }
    options.item_separator = parts[0].as_string();
    options.key_separator = parts[1].as_string();
  }
  options.sort_keys = optional_argument(arguments, 3, "sort_keys", Value(false)).truthy();
  if (input.is_undefined())
    throw TemplateFailure("Object of type Undefined is not JSON serializable");
  return Value(python_json_dumps(input, options));
}

Value filter_int(const Value& input, const CallArguments& arguments) {
  Value fallback = optional_argument(arguments, 0, "default", Value(0));
  int base = static_cast<int>(optional_argument(arguments, 1, "base", Value(10)).as_integer());
  if (input.is_boolean() || input.is_integer()) return Value(input.as_integer());
  if (input.is_float()) return Value(static_cast<int64_t>(input.as_double()));
  if (!input.is_string()) return fallback;
  std::string text = python_strip(input.as_string(), std::nullopt, StripSide::Both);
  try {
    size_t used = 0;
    int64_t value = std::stoll(text, &used, base);
    if (used == text.size()) return Value(value);
    size_t used_float = 0;
    double number = std::stod(text, &used_float);
    if (used_float == text.size() && std::isfinite(number))
      return Value(static_cast<int64_t>(number));
  } catch (const std::exception&) {
  }
  return fallback;
}

Value filter_float(const Value& input, const CallArguments& arguments) {
  Value fallback = optional_argument(arguments, 0, "default", Value(0.0));
  if (input.is_number()) return Value(input.as_double());
  if (!input.is_string()) return fallback;
  std::string text = python_strip(input.as_string(), std::nullopt, StripSide::Both);
  try {
    size_t used = 0;
    double number = std::stod(text, &used);
    if (used == text.size()) return Value(number);
  } catch (const std::exception&) {
  }
  return fallback;
}

// Python's round(): integers stay integers, floats are rounded from their
// exact binary value with ties to even (what printf's "%.*f" does too).
Value python_round(const Value& input, int64_t precision) {
  if (input.is_integer() || input.is_boolean()) {
    if (precision >= 0) return Value(input.as_integer());
    double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value(static_cast<int64_t>(std::nearbyint(input.as_double() / scale) * scale));
  }
  double value = input.as_double();
  if (!std::isfinite(value)) return input;
  if (precision < 0) {
    double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(value / scale) * scale);
  }
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(std::min<int64_t>(precision, 300)),
                value);
  return Value(std::strtod(buffer, nullptr));
}

Value filter_round(const Value& input, const CallArguments& arguments) {
  int64_t precision = optional_argument(arguments, 0, "precision", Value(0)).as_integer();
  std::string method = optional_argument(arguments, 1, "method", Value("common")).to_output();
  if (!input.is_number()) throw TemplateFailure("round: " + input.type_name() + " is not a number");
  if (method == "common") return python_round(input, precision);
  if (method != "ceil" && method != "floor") {
    throw TemplateFailure("method must be common, ceil or floor");
  }
  // jinja2: math.ceil/floor(value * 10**precision) / 10**precision, a float.
  double scale = std::pow(10.0, static_cast<double>(precision));
  double scaled = input.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value filter_indent(const Value& input, const CallArguments& arguments) {
  Value width = optional_argument(arguments, 0, "width", Value(4));
  bool first = optional_argument(arguments, 1, "first", Value(false)).truthy();
  bool blank = optional_argument(arguments, 2, "blank", Value(false)).truthy();
  std::string indention =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_integer())), ' ');
  std::string text = input.to_output();
  std::vector<std::string> lines = python_splitlines(text + "\n", false);
  ensure_room_for(text.size() + bytes_times(lines.size() + 1, indention.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    bool indent_line = i > 0 && (blank || !lines[i].empty());
    out += (indent_line ? indention : "") + lines[i];
  }
  return Value(first ? indention + out : out);
}

Value filter_truncate(const Value& input, const CallArguments& arguments) {
  std::u32string text = utf8_decode(input.to_output());
  auto length = optional_argument(arguments, 0, "length", Value(255)).as_integer();
  bool kill_words = optional_argument(arguments, 1, "killwords", Value(false)).truthy();
  std::string end = optional_argument(arguments, 2, "end", Value("...")).to_output();
  Value leeway_value = optional_argument(arguments, 3, "leeway", Value());
  int64_t leeway = leeway_value.is_none() ? 5 : leeway_value.as_integer();
  auto end_length = static_cast<int64_t>(utf8_length(end));
  if (length < end_length)
    throw TemplateFailure("truncate: expected length >= " + std::to_string(end_length));
  if (static_cast<int64_t>(text.size()) <= length + leeway) return Value(utf8_encode(text));
  std::u32string kept = text.substr(0, static_cast<size_t>(length - end_length));
  if (!kill_words) {
    size_t space = kept.rfind(U' ');
    if (space != std::u32string::npos) kept = kept.substr(0, space);
  }
  return Value(utf8_encode(kept) + end);
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value filter_replace(const Value& input, const CallArguments& arguments) {
  std::string old_text = required_argument(arguments, 0, "old", "replace").to_output();
  std::string new_text = required_argument(arguments, 1, "new", "replace").to_output();
  Value count = optional_argument(arguments, 2, "count", Value());
  return Value(python_replace(input.to_output(), old_text, new_text,
                              count.is_none() ? -1 : count.as_integer()));
}

Value filter_abs(const Value& input, const CallArguments&) {
  if (input.is_float()) return Value(std::fabs(input.as_double()));
  if (input.is_number()) return Value(static_cast<int64_t>(std::llabs(input.as_integer())));
  throw TemplateFailure("bad operand type for abs(): '" + input.type_name() + "'");
}

Value filter_center(const Value& input, const CallArguments& arguments) {
  return Value(python_center(
      input.to_output(), optional_argument(arguments, 0, "width", Value(80)).as_integer(), " "));
}

Value filter_format(const Value& input, const CallArguments& arguments) {
  if (!arguments.keyword.empty())
    throw TemplateFailure("format: keyword arguments are not supported");
  return Value(percent_format(input.to_output(), Value::list(arguments.positional, true)));
}

Value filter_attr(const Value& input, const CallArguments& arguments) {
  return get_attribute(input, required_argument(arguments, 0, "name", "attr").to_output());
}

using Filter = Value (*)(const Value&, const CallArguments&);

const std::unordered_map<std::string, Filter>& text_filters() {
  static const std::unordered_map<std::string, Filter> filters = {
      {"default", filter_default},
      {"d", filter_default},
      {"tojson", filter_tojson},
      {"int", filter_int},
      {"float", filter_float},
      {"round", filter_round},
      {"indent", filter_indent},
      {"truncate", filter_truncate},
      {"replace", filter_replace},
      {"abs", filter_abs},
      {"center", filter_center},
      {"format", filter_format},
      {"attr", filter_attr},
      {"string", [](const Value& v, const CallArguments&) { return Value(v.to_output()); }},
      {"safe", [](const Value& v, const CallArguments&) { return v; }},
      {"escape",
       [](const Value& v, const CallArguments&) { return Value(html_escape(v.to_output())); }},
      {"e", [](const Value& v, const CallArguments&) { return Value(html_escape(v.to_output())); }},
      {"forceescape",
       [](const Value& v, const CallArguments&) { return Value(html_escape(v.to_output())); }},
      {"upper",
       [](const Value& v, const CallArguments&) { return Value(to_upper(v.to_output())); }},
      {"lower",
       [](const Value& v, const CallArguments&) { return Value(to_lower(v.to_output())); }},
      {"title",
       [](const Value& v, const CallArguments&) { return Value(jinja_title(v.to_output())); }},
      {"capitalize", [](const Value& v,
                        const CallArguments&) { return Value(python_capitalize(v.to_output())); }},
      {"wordcount",
       [](const Value& v, const CallArguments&) { return Value(count_words(v.to_output())); }},
      {"trim",
       [](const Value& v, const CallArguments& arguments) {
         Value chars = optional_argument(arguments, 0, "chars", Value());
         return Value(python_strip(
             v.to_output(), chars.is_none() ? std::nullopt : std::optional(chars.to_output()),
             StripSide::Both));
       }},
      {"length", [](const Value& v, const CallArguments&) { return Value(value_length(v)); }},
      {"count", [](const Value& v, const CallArguments&) { return Value(value_length(v)); }},
  };
  return filters;
}

}  // namespace

bool is_known_filter(const std::string& name) {
  return text_filters().count(name) > 0 || is_sequence_filter(name);
}

Value apply_filter(const std::string& name, const Value& input, const CallArguments& arguments) {
  auto found = text_filters().find(name);
  if (found != text_filters().end()) return found->second(input, arguments);
  return apply_sequence_filter(name, input, arguments);
}

}  // namespace mlx_cpp::jinja
