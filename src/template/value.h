#pragma once
// The value type of the Jinja interpreter. It follows Python's data model as
// jinja2 sees it: lists and dicts are shared by reference (a template that
// reads `messages` sees the same objects everywhere), dicts keep insertion
// order, and `undefined` is a value of its own that remembers what was
// missing so errors can say so when it is used.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "template/render_budget.h"

namespace mlx_cpp::jinja {

class Value;

// Containers nest at most this deep, so the recursive walks over them
// (printing, comparing, destroying) stay far from the end of the stack.
// Templates cannot make cycles: lists and dicts are immutable there, and a
// namespace is refused as a value inside itself.
constexpr int kMaxContainerDepth = 512;

struct ListObject {
  std::vector<Value> items;
  bool is_tuple = false;  // prints as (a, b) and is immutable
  int depth = 1;          // 1 + the deepest item's depth
};

struct DictObject {
  std::vector<std::pair<Value, Value>> entries;  // insertion order, unique keys
  bool is_namespace = false;                     // namespace(): attribute assignment allowed
  int depth = 1;                                 // 1 + the deepest value's depth

  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  // Throws TemplateFailure when the value would nest too deeply or holds
  // this dict itself.
  void set(const Value& key, Value value);
};

// Arguments of a call: positional then keyword, as written at the call site.
struct CallArguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Returns the argument named `name` or at `position`, or null when absent.
  const Value* get(size_t position, const std::string& name) const;
};

struct FunctionObject {
  std::string name;
  std::function<Value(const CallArguments&)> call;
};

class Value {
 public:
  enum class Kind { Undefined, None, Boolean, Integer, Float, String, List, Dict, Function };

  Value() : kind_(Kind::None) {}
  Value(bool value) : kind_(Kind::Boolean), boolean_(value) {}
  Value(int value) : kind_(Kind::Integer), integer_(value) {}
  Value(int64_t value) : kind_(Kind::Integer), integer_(value) {}
  Value(double value) : kind_(Kind::Float), float_(value) {}
  // A new string is charged to the running render (render_budget.h); a copy
  // of a Value is not, and lists charge for the strings they hold.
  Value(std::string value) : kind_(Kind::String), string_(std::move(value)) {
    charge_built_bytes(string_.size());
  }
  Value(const char* value) : kind_(Kind::String), string_(value) {
    charge_built_bytes(string_.size());
  }
  Value(std::shared_ptr<ListObject> list) : kind_(Kind::List), list_(std::move(list)) {}
  Value(std::shared_ptr<DictObject> dict) : kind_(Kind::Dict), dict_(std::move(dict)) {}
  Value(std::shared_ptr<FunctionObject> function)
      : kind_(Kind::Function), function_(std::move(function)) {}

  // `message` is what jinja2 says when the value is used: "'x' is undefined".
  static Value undefined(std::string message);
  static Value none() { return Value(); }
  static Value list(std::vector<Value> items = {}, bool is_tuple = false);
  static Value dict();
  static Value function(std::string name, std::function<Value(const CallArguments&)> call);
  static Value from_json(const nlohmann::ordered_json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_float() const { return kind_ == Kind::Float; }
  // Python's numbers include bool.
  bool is_number() const { return is_integer() || is_float() || is_boolean(); }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return is_list() && list_->is_tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return is_dict() && dict_->is_namespace; }
  bool is_function() const { return kind_ == Kind::Function; }

  bool as_boolean() const { return boolean_; }
  int64_t as_integer() const { return is_boolean() ? (boolean_ ? 1 : 0) : integer_; }
  double as_double() const;  // any number
  const std::string& as_string() const { return string_; }
  const std::string& undefined_message() const { return string_; }
  ListObject& as_list() const { return *list_; }
  DictObject& as_dict() const { return *dict_; }
  const FunctionObject& as_function() const { return *function_; }
  const void* identity() const;  // for `is sameas` on shared objects
  int depth() const;             // containers' nesting; 0 for the others

  bool truthy() const;
  // Python's type name, for error messages: 'str', 'int', 'dict', ...
  std::string type_name() const;
  // str(value) as jinja2 prints it: undefined prints as nothing.
  std::string to_output() const;
  // repr(value) as Python writes it: strings quoted, None/True/False.
  std::string repr() const;

 private:
  Kind kind_;
  bool boolean_ = false;
  int64_t integer_ = 0;
  double float_ = 0.0;
  std::string string_;
  std::shared_ptr<ListObject> list_;
  std::shared_ptr<DictObject> dict_;
  std::shared_ptr<FunctionObject> function_;
};

// What holding `value` in a list or dict costs: its slot, and its text when
// it is a string (containers hold copies of strings).
size_t stored_bytes(const Value& value);

// Python's ==, which treats 1 == 1.0 == True and compares containers deeply.
bool values_equal(const Value& left, const Value& right);
// Python's <, for numbers with numbers and strings with strings (by code
// point), lists element-wise; throws for other combinations.
bool values_less(const Value& left, const Value& right);

}  // namespace mlx_cpp::jinja
