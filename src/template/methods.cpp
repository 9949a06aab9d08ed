// Attribute access and the Python methods of str, dict and list that chat
// templates call. Methods that mutate a list or dict are refused, as
// transformers' ImmutableSandboxedEnvironment refuses them.
#include <algorithm>
#include <charconv>

#include "template/builtins.h"
#include "template/filter_helpers.h"
#include "template/python_text.h"
#include "template/string_functions.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

using Method = Value (*)(const Value& self, const CallArguments& arguments);

std::optional<std::string> optional_text(const CallArguments& arguments, size_t position,
                                         const std::string& name) {
  Value value = optional_argument(arguments, position, name, Value());
  if (value.is_none()) return std::nullopt;
  if (!value.is_string())
    throw TemplateFailure(name + " must be str or None, not " + value.type_name());
  return value.as_string();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items(parts.begin(), parts.end());
  return Value::list(std::move(items));
}

// startswith/endswith accept one string or a tuple of them.
bool affix_matches(const std::string& text, const Value& affixes, bool at_start) {
  std::vector<Value> candidates =
      affixes.is_list() ? affixes.as_list().items : std::vector<Value>{affixes};
  for (const auto& candidate : candidates) {
    if (!candidate.is_string()) throw TemplateFailure("startswith/endswith need str arguments");
    const std::string& affix = candidate.as_string();
    if (affix.size() > text.size()) continue;
    if (at_start ? text.compare(0, affix.size(), affix) == 0
                 : text.compare(text.size() - affix.size(), affix.size(), affix) == 0) {
      return true;
    }
  }
  return false;
}

// str.format with {}, {0} and {name} fields and no format specs.
Value string_format(const Value& self, const CallArguments& arguments) {
  const std::string& format = self.as_string();
  std::string out;
  size_t automatic = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos)
      throw TemplateFailure("Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      throw TemplateFailure("str.format: format specs are not supported");
    }
    const Value* value = nullptr;
    if (field.empty())
      value = arguments.get(automatic++, "");
    else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t position = SIZE_MAX;  // a number too large for an index finds nothing
      std::from_chars(field.data(), field.data() + field.size(), position);
      value = arguments.get(position, "");
    } else
      value = arguments.get(SIZE_MAX, field);
    if (!value) throw TemplateFailure("str.format: no argument for field '{" + field + "}'");
    std::string text = value->to_output();
    ensure_room_for(out.size() + text.size());
    out += text;
    i = close;
  }
  return Value(out);
}

Value strip_method(const Value& self, const CallArguments& arguments, StripSide side) {
  return Value(python_strip(self.as_string(), optional_text(arguments, 0, "chars"), side));
}

const std::unordered_map<std::string, Method>& string_methods() {
  static const std::unordered_map<std::string, Method> methods = {
      {"strip",
       [](const Value& s, const CallArguments& a) { return strip_method(s, a, StripSide::Both); }},
      {"lstrip",
       [](const Value& s, const CallArguments& a) { return strip_method(s, a, StripSide::Left); }},
      {"rstrip",
       [](const Value& s, const CallArguments& a) { return strip_method(s, a, StripSide::Right); }},
      {"split",
       [](const Value& s, const CallArguments& a) {
         return string_list(
             python_split(s.as_string(), optional_text(a, 0, "sep"),
                          optional_argument(a, 1, "maxsplit", Value(-1)).as_integer()));
       }},
      {"rsplit",
       [](const Value& s, const CallArguments& a) {
         return string_list(
             python_rsplit(s.as_string(), optional_text(a, 0, "sep"),
                           optional_argument(a, 1, "maxsplit", Value(-1)).as_integer()));
       }},
      {"splitlines",
       [](const Value& s, const CallArguments& a) {
         return string_list(python_splitlines(
             s.as_string(), optional_argument(a, 0, "keepends", Value(false)).truthy()));
       }},
      {"startswith",
       [](const Value& s, const CallArguments& a) {
         return Value(
             affix_matches(s.as_string(), required_argument(a, 0, "prefix", "startswith"), true));
       }},
      {"endswith",
       [](const Value& s, const CallArguments& a) {
         return Value(
             affix_matches(s.as_string(), required_argument(a, 0, "suffix", "endswith"), false));
       }},
      {"replace",
       [](const Value& s, const CallArguments& a) {
         return Value(python_replace(s.as_string(),
                                     required_argument(a, 0, "old", "replace").to_output(),
                                     required_argument(a, 1, "new", "replace").to_output(),
                                     optional_argument(a, 2, "count", Value(-1)).as_integer()));
       }},
      {"upper",
       [](const Value& s, const CallArguments&) { return Value(to_upper(s.as_string())); }},
      {"lower",
       [](const Value& s, const CallArguments&) { return Value(to_lower(s.as_string())); }},
      {"title",
       [](const Value& s, const CallArguments&) { return Value(python_title(s.as_string())); }},
      {"capitalize", [](const Value& s,
                        const CallArguments&) { return Value(python_capitalize(s.as_string())); }},
      {"format", string_format},
      {"find",
       [](const Value& s, const CallArguments& a) {
         return Value(
             python_find(s.as_string(), required_argument(a, 0, "sub", "find").to_output(), false));
       }},
      {"rfind",
       [](const Value& s, const CallArguments& a) {
         return Value(
             python_find(s.as_string(), required_argument(a, 0, "sub", "rfind").to_output(), true));
       }},
      {"count",
       [](const Value& s, const CallArguments& a) {
         return Value(
             python_count(s.as_string(), required_argument(a, 0, "sub", "count").to_output()));
       }},
      {"join",
       [](const Value& s, const CallArguments& a) {
         std::string out;
         bool first = true;
         for (const auto& item : iterate_values(required_argument(a, 0, "iterable", "join"))) {
           if (!item.is_string())
             throw TemplateFailure("sequence item: expected str instance, " + item.type_name() +
                                   " found");
           ensure_room_for(out.size() + s.as_string().size() + item.as_string().size());
           if (!first) out += s.as_string();
           first = false;
           out += item.as_string();
         }
         return Value(out);
       }},
      {"center",
       [](const Value& s, const CallArguments& a) {
         return Value(python_center(s.as_string(),
                                    required_argument(a, 0, "width", "center").as_integer(),
                                    optional_argument(a, 1, "fillchar", Value(" ")).to_output()));
       }},
      {"isdigit",
       [](const Value& s, const CallArguments&) {
         const std::string& t = s.as_string();
         return Value(!t.empty() && std::all_of(t.begin(), t.end(), ::isdigit));
       }},
      {"isspace",
       [](const Value& s, const CallArguments&) {
         std::u32string t = utf8_decode(s.as_string());
         return Value(!t.empty() && std::all_of(t.begin(), t.end(), is_python_space));
       }},
  };
  return methods;
}

Value dict_get(const Value& self, const CallArguments& arguments) {
  const Value* found = self.as_dict().find(required_argument(arguments, 0, "key", "get"));
  return found ? *found : optional_argument(arguments, 1, "default", Value());
}

Value dict_view(const Value& self, int part) {
  std::vector<Value> out;
  for (const auto& [key, value] : self.as_dict().entries) {
    out.push_back(part == 0 ? key : part == 1 ? value : Value::list({key, value}, true));
  }
  return Value::list(std::move(out));
}

const std::unordered_map<std::string, Method>& dict_methods() {
  static const std::unordered_map<std::string, Method> methods = {
      {"get", dict_get},
      {"keys", [](const Value& s, const CallArguments&) { return dict_view(s, 0); }},
      {"values", [](const Value& s, const CallArguments&) { return dict_view(s, 1); }},
      {"items", [](const Value& s, const CallArguments&) { return dict_view(s, 2); }},
      {"copy",
       [](const Value& s, const CallArguments&) {
         Value copy = Value::dict();
         for (const auto& [key, value] : s.as_dict().entries) copy.as_dict().set(key, value);
         return copy;
       }},
  };
  return methods;
}

const std::unordered_map<std::string, Method>& list_methods() {
  static const std::unordered_map<std::string, Method> methods = {
      {"index",
       [](const Value& s, const CallArguments& a) {
         Value needle = required_argument(a, 0, "value", "index");
         const auto& items = s.as_list().items;
         for (size_t i = 0; i < items.size(); ++i) {
           if (values_equal(items[i], needle)) return Value(static_cast<int64_t>(i));
         }
         throw TemplateFailure(needle.repr() + " is not in list");
       }},
      {"count",
       [](const Value& s, const CallArguments& a) {
         Value needle = required_argument(a, 0, "value", "count");
         const auto& items = s.as_list().items;
         return Value(
             static_cast<int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& item) {
               return values_equal(item, needle);
             })));
       }},
      {"copy", [](const Value& s, const CallArguments&) { return Value::list(s.as_list().items); }},
  };
  return methods;
}

bool is_mutating_method(const Value& object, const std::string& name) {
  static const std::vector<std::string> list_mutators = {"append", "pop",   "extend", "insert",
                                                         "remove", "clear", "sort",   "reverse"};
  static const std::vector<std::string> dict_mutators = {"pop", "popitem", "clear", "setdefault",
                                                         "update"};
  const auto& names = object.is_list() ? list_mutators : dict_mutators;
  return std::find(names.begin(), names.end(), name) != names.end();
}

Value bind_method(const Value& self, const std::string& name, Method method) {
  return Value::function(
      name, [self, method](const CallArguments& arguments) { return method(self, arguments); });
}

Value lookup_method(const Value& object, const std::string& name) {
  const std::unordered_map<std::string, Method>* methods = nullptr;
  if (object.is_string())
    methods = &string_methods();
  else if (object.is_namespace())
    return Value::undefined("");
  else if (object.is_dict())
    methods = &dict_methods();
  else if (object.is_list())
    methods = &list_methods();
  if ((object.is_list() || object.is_dict()) && is_mutating_method(object, name)) {
    return Value::undefined("access to attribute '" + name + "' of '" + object.type_name() +
                            "' object is unsafe.");
  }
  if (!methods) return Value::undefined("");
  auto found = methods->find(name);
  if (found == methods->end()) return Value::undefined("");
  return bind_method(object, name, found->second);
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
  Value method = lookup_method(object, name);
  if (!method.is_undefined() || !method.undefined_message().empty()) return method;
  if (object.is_dict()) {
    if (const Value* found = object.as_dict().find(name)) return *found;
  }
  std::string message = "'";
  message += object.type_name() + " object' has no attribute '" + name + "'";
  return Value::undefined(message);
}

}  // namespace mlx_cpp::jinja
