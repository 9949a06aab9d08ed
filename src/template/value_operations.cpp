#include "template/value_operations.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "template/builtins.h"
#include "template/python_text.h"

namespace mlx_cpp::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& left, const Value& right) {
  throw TemplateFailure("unsupported operand type(s) for " + op + ": '" + left.type_name() +
                        "' and '" + right.type_name() + "'");
}

// Python's integers do not overflow; ours are 64 bits. Where Python's
// result does not fit, the template fails (never C++'s undefined
// behaviour, nor a SIGFPE on INT64_MIN // -1).
[[noreturn]] void overflow(const std::string& op) {
  throw TemplateFailure("integer overflow: the result of " + op + " does not fit in 64 bits");
}

// Python's floor division and modulo round towards negative infinity.
int64_t floor_divide(int64_t a, int64_t b) {
  if (b == -1) {
    if (a == std::numeric_limits<int64_t>::min()) overflow("//");
    return -a;
  }
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

int64_t floor_modulo(int64_t a, int64_t b) {
  if (b == -1) return 0;
  return a - floor_divide(a, b) * b;
}

// a ** b for b >= 0, by squaring: a huge exponent takes 64 steps, not 2^63.
int64_t power(int64_t a, int64_t b) {
  if (a == 0) return b == 0 ? 1 : 0;
  if (a == 1) return 1;
  if (a == -1) return b % 2 == 0 ? 1 : -1;
  int64_t result = 1;
  while (b > 0) {
    if ((b & 1) && __builtin_mul_overflow(result, a, &result)) overflow("**");
    b >>= 1;
    if (b > 0 && __builtin_mul_overflow(a, a, &a)) overflow("**");
  }
  return result;
}

Value repeat(const Value& sequence, int64_t count) {
  const size_t times = count > 0 ? static_cast<size_t>(count) : 0;
  if (sequence.is_string()) {
    ensure_room_for(bytes_times(times, sequence.as_string().size()));
    std::string out;
    for (int64_t i = 0; i < count; ++i) out += sequence.as_string();
    return Value(out);
  }
  size_t item_bytes = 0;
  for (const auto& item : sequence.as_list().items) item_bytes += stored_bytes(item);
  ensure_room_for(bytes_times(times, item_bytes));
  std::vector<Value> items;
  for (int64_t i = 0; i < count; ++i) {
    for (const auto& item : sequence.as_list().items) items.push_back(item);
  }
  return Value::list(std::move(items), sequence.is_tuple());
}

Value numeric(const std::string& op, const Value& left, const Value& right) {
  bool as_float = left.is_float() || right.is_float() || op == "/";
  if (op == "**" && !as_float && right.as_integer() < 0) as_float = true;
  if ((op == "/" || op == "//" || op == "%") && right.as_double() == 0.0) {
    throw TemplateFailure(op == "%" ? "integer modulo by zero" : "division by zero");
  }
  if (as_float) {
    double a = left.as_double();
    double b = right.as_double();
    if (op == "+") return Value(a + b);
    if (op == "-") return Value(a - b);
    if (op == "*") return Value(a * b);
    if (op == "/") return Value(a / b);
    if (op == "//") return Value(std::floor(a / b));
    if (op == "%") {
      double remainder = std::fmod(a, b);
      if (remainder != 0.0 && ((remainder < 0) != (b < 0))) remainder += b;
      return Value(remainder);
    }
    return Value(std::pow(a, b));
  }
  int64_t a = left.as_integer();
  int64_t b = right.as_integer();
  int64_t result = 0;
  if (op == "+") {
    if (__builtin_add_overflow(a, b, &result)) overflow(op);
  } else if (op == "-") {
    if (__builtin_sub_overflow(a, b, &result)) overflow(op);
  } else if (op == "*") {
    if (__builtin_mul_overflow(a, b, &result)) overflow(op);
  } else if (op == "//") {
    result = floor_divide(a, b);
  } else if (op == "%") {
    result = floor_modulo(a, b);
  } else {
    result = power(a, b);
  }
  return Value(result);
}

std::optional<int64_t> normalize_index(int64_t index, int64_t size) {
  if (index < 0) index += size;
  if (index < 0 || index >= size) return std::nullopt;
  return index;
}

// printf into a string of the size it needs, after checking the render
// can afford it (a width like %999999999d is the template's to pay for).
template <typename Argument>
std::string print_formatted(const std::string& format, Argument argument) {
  int size = std::snprintf(nullptr, 0, format.c_str(), argument);
  if (size < 0) throw TemplateFailure("invalid format '" + format + "'");
  ensure_room_for(static_cast<size_t>(size));
  std::string out(static_cast<size_t>(size) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), argument);
  out.resize(static_cast<size_t>(size));
  return out;
}

std::string format_one(const std::string& spec, char conversion, const Value& argument) {
  std::string format = "%" + spec;
  // The width alone can ask for any size; printf would spend seconds
  // counting out a padding of 10^9 before the budget could refuse it.
  const size_t digits = spec.find_first_of("123456789");
  if (digits != std::string::npos && digits < spec.find('.'))
    ensure_room_for(std::strtoull(spec.c_str() + digits, nullptr, 10));
  switch (conversion) {
    case 's':
    case 'r': {
      std::string text = conversion == 's' ? argument.to_output() : argument.repr();
      size_t dot = spec.find('.');
      if (dot != std::string::npos) {
        std::u32string code_points = utf8_decode(text);
        size_t precision = std::strtoul(spec.c_str() + dot + 1, nullptr, 10);
        if (code_points.size() > precision) text = utf8_encode(code_points.substr(0, precision));
      }
      std::string width_text = spec.substr(0, dot);
      bool left_align = width_text.find('-') != std::string::npos;
      size_t digits = width_text.find_first_of("123456789");
      size_t width =
          digits == std::string::npos ? 0 : std::strtoul(width_text.c_str() + digits, nullptr, 10);
      size_t length = utf8_length(text);
      if (length >= width) return text;
      ensure_room_for(text.size() + (width - length));
      std::string padding(width - length, ' ');
      return left_align ? text + padding : padding + text;
    }
    case 'd':
    case 'i':
      if (!argument.is_number()) throw TemplateFailure("%d format: a real number is required");
      return print_formatted(
          format + "lld",
          static_cast<long long>(argument.is_float() ? static_cast<int64_t>(argument.as_double())
                                                     : argument.as_integer()));
    case 'x':
    case 'X':
      if (!argument.is_integer()) throw TemplateFailure("%x format: an integer is required");
      return print_formatted(format + "ll" + conversion,
                             static_cast<long long>(argument.as_integer()));
    case 'f':
    case 'F':
    case 'e':
    case 'g':
      if (!argument.is_number()) throw TemplateFailure("%f format: a real number is required");
      return print_formatted(format + conversion, argument.as_double());
    default:
      throw TemplateFailure("unsupported format character '" + std::string(1, conversion) + "'");
  }
}

}  // namespace

[[noreturn]] void raise_undefined(const Value& undefined) {
  throw TemplateFailure(undefined.undefined_message());
}

std::vector<Value> iterate_values(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return value.as_list().items;
    case Value::Kind::Dict: {
      if (value.is_namespace()) break;
      std::vector<Value> keys;
      for (const auto& entry : value.as_dict().entries) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::String: {
      ensure_room_for(bytes_times(value.as_string().size(), sizeof(Value)));
      std::vector<Value> characters;
      for (char32_t c : utf8_decode(value.as_string())) {
        std::string text;
        utf8_append(text, c);
        characters.emplace_back(text);
      }
      return characters;
    }
    default:
      break;
  }
  throw TemplateFailure("'" + value.type_name() + "' object is not iterable");
}

int64_t value_length(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(utf8_length(value.as_string()));
    case Value::Kind::List:
      return static_cast<int64_t>(value.as_list().items.size());
    case Value::Kind::Dict:
      if (!value.is_namespace()) return static_cast<int64_t>(value.as_dict().entries.size());
      break;
    default:
      break;
  }
  throw TemplateFailure("object of type '" + value.type_name() + "' has no len()");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) raise_undefined(object);
  if (object.is_dict() && !object.is_namespace()) {
    if (const Value* found = object.as_dict().find(key)) return *found;
  } else if ((object.is_list() || object.is_string()) && key.is_integer()) {
    if (object.is_list()) {
      const auto& items = object.as_list().items;
      auto index = normalize_index(key.as_integer(), static_cast<int64_t>(items.size()));
      if (index) return items[static_cast<size_t>(*index)];
    } else {
      std::u32string text = utf8_decode(object.as_string());
      auto index = normalize_index(key.as_integer(), static_cast<int64_t>(text.size()));
      if (index) return Value(utf8_encode(text.substr(static_cast<size_t>(*index), 1)));
    }
  }
  if (key.is_string()) {
    Value attribute = get_attribute(object, key.as_string());
    if (!attribute.is_undefined()) return attribute;
  }
  return Value::undefined("'" + object.type_name() + " object' has no attribute " + key.repr());
}

Value slice_value(const Value& object, const std::optional<int64_t>& start,
                  const std::optional<int64_t>& stop, const std::optional<int64_t>& step) {
  if (object.is_undefined()) raise_undefined(object);
  int64_t stride = step.value_or(1);
  if (stride == 0) throw TemplateFailure("slice step cannot be zero");
  std::vector<Value> items;
  std::u32string text;
  if (object.is_string())
    text = utf8_decode(object.as_string());
  else if (object.is_list())
    items = object.as_list().items;
  else
    throw TemplateFailure("'" + object.type_name() + "' object is not subscriptable");
  auto size = static_cast<int64_t>(object.is_string() ? text.size() : items.size());
  auto clamp = [&](std::optional<int64_t> bound, int64_t fallback) {
    if (!bound) return fallback;
    int64_t index = *bound < 0 ? *bound + size : *bound;
    int64_t low = stride > 0 ? 0 : -1;
    int64_t high = stride > 0 ? size : size - 1;
    return std::max(low, std::min(index, high));
  };
  int64_t first = clamp(start, stride > 0 ? 0 : size - 1);
  int64_t last = clamp(stop, stride > 0 ? size : -1);
  std::u32string text_out;
  std::vector<Value> items_out;
  for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) {
    if (object.is_string())
      text_out += text[static_cast<size_t>(i)];
    else
      items_out.push_back(items[static_cast<size_t>(i)]);
  }
  if (object.is_string()) return Value(utf8_encode(text_out));
  return Value::list(std::move(items_out), object.is_tuple());
}

Value arithmetic(const std::string& op, const Value& left, const Value& right) {
  if (left.is_undefined()) raise_undefined(left);
  if (right.is_undefined()) raise_undefined(right);
  if (left.is_number() && right.is_number()) return numeric(op, left, right);
  if (op == "+" && left.is_string() && right.is_string()) {
    return Value(left.as_string() + right.as_string());
  }
  if (op == "+" && left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple()) {
    std::vector<Value> items = left.as_list().items;
    for (const auto& item : right.as_list().items) items.push_back(item);
    return Value::list(std::move(items), left.is_tuple());
  }
  if (op == "*" && (left.is_string() || left.is_list()) && right.is_integer()) {
    return repeat(left, right.as_integer());
  }
  if (op == "*" && (right.is_string() || right.is_list()) && left.is_integer()) {
    return repeat(right, left.as_integer());
  }
  if (op == "%" && left.is_string()) return Value(percent_format(left.as_string(), right));
  unsupported(op, left, right);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      throw TemplateFailure("'in <string>' requires string as left operand, not " +
                            item.type_name());
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict() && !container.is_namespace()) {
    return container.as_dict().find(item) != nullptr;
  }
  for (const auto& element : iterate_values(container)) {
    if (values_equal(element, item)) return true;
  }
  return false;
}

std::string percent_format(const std::string& format, const Value& arguments) {
  std::vector<Value> values =
      arguments.is_tuple() ? arguments.as_list().items : std::vector<Value>{arguments};
  std::string out;
  size_t next_argument = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t spec_start = ++i;
    while (i < format.size() &&
           std::string("-+ #0123456789.").find(format[i]) != std::string::npos) {
      ++i;
    }
    if (i >= format.size()) throw TemplateFailure("incomplete format");
    if (format[i] == '%') {
      out += '%';
      continue;
    }
    if (next_argument >= values.size())
      throw TemplateFailure("not enough arguments for format string");
    out +=
        format_one(format.substr(spec_start, i - spec_start), format[i], values[next_argument++]);
  }
  if (next_argument < values.size()) {
    throw TemplateFailure("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace mlx_cpp::jinja
