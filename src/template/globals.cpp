// Global functions: jinja2's range/dict/namespace/joiner/cycler and
// transformers' raise_exception and strftime_now.
#include <ctime>
#include <memory>

#include "template/builtins.h"
#include "template/filter_helpers.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

// jinja2's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

Value range_function(const CallArguments& arguments) {
  if (!arguments.keyword.empty()) throw TemplateFailure("range() takes no keyword arguments");
  const auto& values = arguments.positional;
  if (values.empty() || values.size() > 3) throw TemplateFailure("range expected 1 to 3 arguments");
  for (const auto& value : values) {
    if (!value.is_integer() && !value.is_boolean()) {
      throw TemplateFailure("'" + value.type_name() +
                            "' object cannot be interpreted as an integer");
    }
  }
  int64_t start = values.size() == 1 ? 0 : values[0].as_integer();
  int64_t stop = values.size() == 1 ? values[0].as_integer() : values[1].as_integer();
  int64_t step = values.size() == 3 ? values[2].as_integer() : 1;
  if (step == 0) throw TemplateFailure("range() arg 3 must not be zero");
  // Counted in unsigned arithmetic: stop - start may not fit in 64 signed
  // bits (range(-2**63, 2**63 - 1)).
  uint64_t count = 0;
  if (step > 0 && stop > start)
    count = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) /
                static_cast<uint64_t>(step) +
            1;
  if (step < 0 && start > stop)
    count = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) /
                (uint64_t{0} - static_cast<uint64_t>(step)) +
            1;
  if (count > static_cast<uint64_t>(kMaxRange)) {
    throw TemplateFailure("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                          std::to_string(kMaxRange) + ").");
  }
  std::vector<Value> items;
  int64_t value = start;
  for (uint64_t i = 0; i < count; ++i) {
    items.emplace_back(value);
    if (i + 1 < count) value += step;  // the next item lies between start and stop
  }
  return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **keywords) and namespace(...) take the same input.
void fill_mapping(DictObject& target, const CallArguments& arguments, const char* function) {
  if (arguments.positional.size() > 1) {
    throw TemplateFailure(std::string(function) + " expected at most 1 positional argument");
  }
  if (!arguments.positional.empty()) {
    const Value& source = arguments.positional[0];
    if (source.is_dict()) {
      for (const auto& [key, value] : source.as_dict().entries) target.set(key, value);
    } else {
      for (const auto& pair : iterate_values(source)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2) {
          throw TemplateFailure(std::string(function) + ": sequence elements must be pairs");
        }
        target.set(pair.as_list().items[0], pair.as_list().items[1]);
      }
    }
  }
  for (const auto& [key, value] : arguments.keyword) target.set(Value(key), value);
}

Value namespace_function(const CallArguments& arguments) {
  Value result = Value::dict();
  result.as_dict().is_namespace = true;
  fill_mapping(result.as_dict(), arguments, "namespace");
  for (const auto& [key, value] : result.as_dict().entries) {
    if (key.is_string() && !key.as_string().empty() && key.as_string()[0] == '_') {
      throw TemplateFailure("cannot store underscore-prefixed attribute " + key.repr() +
                            " on a namespace");
    }
  }
  return result;
}

Value strftime_now(const CallArguments& arguments) {
  std::string format = required_argument(arguments, 0, "format", "strftime_now").to_output();
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  size_t written = std::strftime(buffer, sizeof(buffer), format.c_str(), &local);
  if (written == 0 && !format.empty()) throw TemplateFailure("strftime_now: format too long");
  return Value(std::string(buffer, written));
}

Value joiner_function(const CallArguments& arguments) {
  std::string separator = optional_argument(arguments, 0, "sep", Value(", ")).to_output();
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [separator, used](const CallArguments&) {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return Value(separator);
  });
}

}  // namespace

void add_global_functions(std::vector<std::pair<std::string, Value>>& globals) {
  globals.emplace_back("range", Value::function("range", range_function));
  globals.emplace_back("dict", Value::function("dict", [](const CallArguments& arguments) {
                         Value result = Value::dict();
                         fill_mapping(result.as_dict(), arguments, "dict");
                         return result;
                       }));
  globals.emplace_back("namespace", Value::function("namespace", namespace_function));
  globals.emplace_back(
      "raise_exception",
      Value::function("raise_exception", [](const CallArguments& arguments) -> Value {
        throw TemplateFailure(
            required_argument(arguments, 0, "message", "raise_exception").to_output());
      }));
  globals.emplace_back("strftime_now", Value::function("strftime_now", strftime_now));
  globals.emplace_back("joiner", Value::function("joiner", joiner_function));
}

}  // namespace mlx_cpp::jinja
