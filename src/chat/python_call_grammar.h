#pragma once
// An EBNF grammar (xgrammar's dialect) for Python calls whose keyword
// arguments follow a tool's JSON schema: NAME(key=VALUE, ...), the
// properties in their declared order, the required ones always, the
// others optionally. Values are Python literals typed by their property:
// strings (double-quoted), an enum's choices, integers (a small range's
// values exactly), numbers, True/False, None, and any literal where the
// schema says no more (lists and dicts are not checked against it).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mlx_cpp::chat {

struct PythonCallRules {
  std::string root;   // the rule name one call is
  std::string rules;  // every rule, one a line
};

// `prefix` keeps the rules of several tools apart in one grammar.
PythonCallRules python_call_rules(std::string_view name, const nlohmann::ordered_json& parameters,
                                  const std::string& prefix);
// The rules every call grammar uses (py_string, py_literal, ...).
std::string python_literal_rules();

}  // namespace mlx_cpp::chat
