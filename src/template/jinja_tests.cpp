// jinja2's tests (`x is defined`, `x is divisibleby 3`, ...).
#include <unordered_map>

#include "template/builtins.h"
#include "template/filter_helpers.h"
#include "template/string_functions.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

using Test = bool (*)(const Value&, const CallArguments&);

Value other_argument(const CallArguments& arguments, const char* test) {
  return required_argument(arguments, 0, "other", test);
}

int64_t integer_operand(const Value& value, const char* test) {
  if (!value.is_integer() && !value.is_boolean()) {
    throw TemplateFailure(std::string("test '") + test + "' needs an integer, got " +
                          value.type_name());
  }
  return value.as_integer();
}

// Python's `a is b`: identity for containers, equal value for singletons.
bool same_object(const Value& left, const Value& right) {
  if (left.kind() != right.kind()) return false;
  if (left.is_list() || left.is_dict() || left.is_function())
    return left.identity() == right.identity();
  return values_equal(left, right);
}

bool has_letters(const std::string& text) {
  return to_upper(text) != to_lower(text);
}

const std::unordered_map<std::string, Test>& tests() {
  static const std::unordered_map<std::string, Test> table = {
      {"defined", [](const Value& v, const CallArguments&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArguments&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArguments&) { return v.is_none(); }},
      {"string", [](const Value& v, const CallArguments&) { return v.is_string(); }},
      {"mapping",
       [](const Value& v, const CallArguments&) { return v.is_dict() && !v.is_namespace(); }},
      {"iterable",
       [](const Value& v, const CallArguments&) {
         return v.is_undefined() || v.is_string() || v.is_list() ||
                (v.is_dict() && !v.is_namespace());
       }},
      {"sequence",
       [](const Value& v, const CallArguments&) {
         return v.is_undefined() || v.is_string() || v.is_list() ||
                (v.is_dict() && !v.is_namespace());
       }},
      {"number", [](const Value& v, const CallArguments&) { return v.is_number(); }},
      {"integer", [](const Value& v, const CallArguments&) { return v.is_integer(); }},
      {"float", [](const Value& v, const CallArguments&) { return v.is_float(); }},
      {"boolean", [](const Value& v, const CallArguments&) { return v.is_boolean(); }},
      {"true",
       [](const Value& v, const CallArguments&) { return v.is_boolean() && v.as_boolean(); }},
      {"false",
       [](const Value& v, const CallArguments&) { return v.is_boolean() && !v.as_boolean(); }},
      {"callable", [](const Value& v, const CallArguments&) { return v.is_function(); }},
      {"escaped", [](const Value&, const CallArguments&) { return false; }},
      {"odd",
       [](const Value& v, const CallArguments&) { return integer_operand(v, "odd") % 2 != 0; }},
      {"even",
       [](const Value& v, const CallArguments&) { return integer_operand(v, "even") % 2 == 0; }},
      {"divisibleby",
       [](const Value& v, const CallArguments& a) {
         int64_t divisor =
             integer_operand(required_argument(a, 0, "num", "divisibleby"), "divisibleby");
         if (divisor == 0) throw TemplateFailure("integer modulo by zero");
         return arithmetic("%", v, Value(divisor)).as_integer() == 0;
       }},
      {"lower",
       [](const Value& v, const CallArguments&) {
         std::string text = v.to_output();
         return has_letters(text) && to_lower(text) == text;
       }},
      {"upper",
       [](const Value& v, const CallArguments&) {
         std::string text = v.to_output();
         return has_letters(text) && to_upper(text) == text;
       }},
      {"sameas",
       [](const Value& v, const CallArguments& a) {
         return same_object(v, other_argument(a, "sameas"));
       }},
      {"in",
       [](const Value& v, const CallArguments& a) {
         return contains(required_argument(a, 0, "seq", "in"), v);
       }},
      {"filter",
       [](const Value& v, const CallArguments&) {
         return v.is_string() && is_known_filter(v.as_string());
       }},
      {"test", [](const Value& v,
                  const CallArguments&) { return v.is_string() && is_known_test(v.as_string()); }},
  };
  return table;
}

// Comparison tests under all of jinja2's names.
std::optional<std::string> comparison_operator(const std::string& name) {
  static const std::unordered_map<std::string, std::string> names = {
      {"eq", "=="}, {"equalto", "=="},    {"==", "=="}, {"ne", "!="}, {"!=", "!="},
      {"lt", "<"},  {"lessthan", "<"},    {"<", "<"},   {"le", "<="}, {"<=", "<="},
      {"gt", ">"},  {"greaterthan", ">"}, {">", ">"},   {"ge", ">="}, {">=", ">="},
  };
  auto found = names.find(name);
  if (found == names.end()) return std::nullopt;
  return found->second;
}

}  // namespace

bool is_known_test(const std::string& name) {
  return tests().count(name) > 0 || comparison_operator(name).has_value();
}

bool apply_test(const std::string& name, const Value& input, const CallArguments& arguments) {
  if (auto op = comparison_operator(name)) {
    Value other = other_argument(arguments, name.c_str());
    if (*op == "==") return values_equal(input, other);
    if (*op == "!=") return !values_equal(input, other);
    if (*op == "<") return values_less(input, other);
    if (*op == ">") return values_less(other, input);
    if (*op == "<=") return !values_less(other, input);
    return !values_less(input, other);
  }
  auto found = tests().find(name);
  if (found == tests().end()) throw TemplateFailure("no test named '" + name + "'");
  return found->second(input, arguments);
}

}  // namespace mlx_cpp::jinja
