#include "chat/python_call_grammar.h"

#include <algorithm>
#include <vector>

namespace mlx_cpp::chat {
namespace {

using Json = nlohmann::ordered_json;

// A string as an EBNF literal.
std::string literal(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

// A JSON value as Python writes it (True/False/None; strings as JSON
// writes them, which Python reads the same).
std::string python_literal(const Json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  return value.dump();
}

// The largest integer range spelled out value by value.
constexpr long long kMaxSpelledRange = 64;

std::string value_rule(const Json& property) {
  if (!property.is_object()) return "py_literal";
  if (auto choices = property.find("enum"); choices != property.end() && choices->is_array()) {
    std::string rule;
    for (const auto& choice : *choices)
      rule += (rule.empty() ? "" : " | ") + literal(python_literal(choice));
    return rule.empty() ? "py_literal" : "(" + rule + ")";
  }
  const auto type = property.value("type", Json()).is_string() ? property["type"].get<std::string>()
                                                               : std::string();
  if (type == "string") return "py_string";
  if (type == "boolean") return "py_bool";
  if (type == "null") return "\"None\"";
  if (type == "number") return "py_number";
  if (type == "integer") {
    const auto low = property.find("minimum"), high = property.find("maximum");
    if (low != property.end() && high != property.end() && low->is_number_integer() &&
        high->is_number_integer() && high->get<long long>() >= low->get<long long>() &&
        high->get<long long>() - low->get<long long>() < kMaxSpelledRange) {
      std::string rule;
      for (long long value = low->get<long long>(); value <= high->get<long long>(); ++value)
        rule += (rule.empty() ? "" : " | ") + literal(std::to_string(value));
      return "(" + rule + ")";
    }
    return "py_integer";
  }
  return "py_literal";
}

}  // namespace

PythonCallRules python_call_rules(std::string_view name, const Json& parameters,
                                  const std::string& prefix) {
  struct Parameter {
    std::string key;
    std::string value;
    bool required;
  };
  std::vector<Parameter> list;
  const Json empty = Json::object();
  const auto& properties = parameters.contains("properties") && parameters["properties"].is_object()
                               ? parameters["properties"]
                               : empty;
  const auto& required = parameters.contains("required") && parameters["required"].is_array()
                             ? parameters["required"]
                             : Json::array();
  for (const auto& [key, property] : properties.items()) {
    const bool needed = std::find(required.begin(), required.end(), key) != required.end();
    list.push_back({key, value_rule(property), needed});
  }
  // rest_I_F: the parameters from I on; F: whether one was written before
  // (so the next needs a comma).
  std::string rules;
  auto rest = [&](size_t index, bool after) {
    return prefix + "_rest_" + std::to_string(index) + (after ? "_after" : "_first");
  };
  for (size_t i = list.size() + 1; i-- > 0;) {
    for (bool after : {false, true}) {
      std::string body;
      if (i == list.size()) {
        body = "\"\"";
      } else {
        const auto& parameter = list[i];
        const std::string written = std::string(after ? "\", \" " : "") +
                                    literal(parameter.key + "=") + " " + parameter.value + " " +
                                    rest(i + 1, true);
        body = parameter.required ? written : "(" + written + ") | " + rest(i + 1, after);
      }
      rules += rest(i, after) + " ::= " + body + "\n";
    }
  }
  const std::string root = prefix + "_call";
  rules += root + " ::= " + literal(std::string(name) + "(") + " " + rest(0, false) + " \")\"\n";
  return {root, rules};
}

std::string python_literal_rules() {
  return R"(py_string ::= "\"" ([^"\\\r\n] | "\\" ["\\nrt])* "\""
py_integer ::= "-"? ("0" | [1-9] [0-9]*)
py_number ::= py_integer ("." [0-9]+)?
py_bool ::= "True" | "False"
py_literal ::= py_string | py_number | py_bool | "None" | py_list | py_dict
py_list ::= "[" (py_literal (", " py_literal)*)? "]"
py_dict ::= "{" (py_string ": " py_literal (", " py_string ": " py_literal)*)? "}"
)";
}

}  // namespace mlx_cpp::chat
