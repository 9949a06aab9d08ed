#include "template/value.h"

#include <cmath>

#include "template/python_text.h"

namespace mlx_cpp::jinja {

const Value* DictObject::find(const Value& key) const {
  for (const auto& [existing, value] : entries) {
    if (values_equal(existing, key)) return &value;
  }
  return nullptr;
}

const Value* DictObject::find(const std::string& key) const {
  for (const auto& [existing, value] : entries) {
    if (existing.is_string() && existing.as_string() == key) return &value;
  }
  return nullptr;
}

void DictObject::set(const Value& key, Value value) {
  for (auto& entry : entries) {
    if (values_equal(entry.first, key)) {
      entry.second = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

const Value* CallArguments::get(size_t position, const std::string& name) const {
  if (position < positional.size()) return &positional[position];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

Value Value::undefined(std::string message) {
  Value value;
  value.kind_ = Kind::Undefined;
  value.string_ = std::move(message);
  return value;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto list = std::make_shared<ListObject>();
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  return Value(std::move(list));
}

Value Value::dict() {
  return Value(std::make_shared<DictObject>());
}

Value Value::function(std::string name, std::function<Value(const CallArguments&)> call) {
  auto function = std::make_shared<FunctionObject>();
  function->name = std::move(name);
  function->call = std::move(call);
  return Value(std::move(function));
}

Value Value::from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(json.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& item : json) items.push_back(from_json(item));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value result = dict();
      for (const auto& [key, item] : json.items()) {
        result.as_dict().entries.emplace_back(Value(key), from_json(item));
      }
      return result;
    }
    default:
      return Value();
  }
}

double Value::as_double() const {
  if (is_float()) return float_;
  return static_cast<double>(as_integer());
}

const void* Value::identity() const {
  if (is_list()) return list_.get();
  if (is_dict()) return dict_.get();
  if (is_function()) return function_.get();
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Boolean:
      return boolean_;
    case Kind::Integer:
      return integer_ != 0;
    case Kind::Float:
      return float_ != 0.0;
    case Kind::String:
      return !string_.empty();
    case Kind::List:
      return !list_->items.empty();
    case Kind::Dict:
      return dict_->is_namespace || !dict_->entries.empty();
    case Kind::Function:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Boolean:
      return "bool";
    case Kind::Integer:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return list_->is_tuple ? "tuple" : "list";
    case Kind::Dict:
      return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::Function:
      return "function";
  }
  return "object";
}

std::string Value::to_output() const {
  if (is_undefined()) return "";
  if (is_string()) return string_;
  return repr();
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Boolean:
      return boolean_ ? "True" : "False";
    case Kind::Integer:
      return std::to_string(integer_);
    case Kind::Float:
      return python_float_repr(float_);
    case Kind::String:
      return python_string_repr(string_);
    case Kind::List: {
      std::string out = list_->is_tuple ? "(" : "[";
      for (size_t i = 0; i < list_->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += list_->items[i].repr();
      }
      if (list_->is_tuple && list_->items.size() == 1) out += ",";
      return out + (list_->is_tuple ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = dict_->is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->entries.size(); ++i) {
        if (i > 0) out += ", ";
        out += dict_->entries[i].first.repr() + ": " + dict_->entries[i].second.repr();
      }
      return out + (dict_->is_namespace ? "}>" : "}");
    }
    case Kind::Function:
      return "<function " + function_->name + ">";
  }
  return "";
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind_) {
    case Kind::None:
      return nullptr;
    case Kind::Boolean:
      return boolean_;
    case Kind::Integer:
      return integer_;
    case Kind::Float:
      return float_;
    case Kind::String:
      return string_;
    case Kind::List: {
      auto out = nlohmann::ordered_json::array();
      for (const auto& item : list_->items) out.push_back(item.to_json());
      return out;
    }
    case Kind::Dict: {
      auto out = nlohmann::ordered_json::object();
      for (const auto& [key, item] : dict_->entries) out[key.to_output()] = item.to_json();
      return out;
    }
    default:
      throw TemplateFailure("cannot convert " + type_name() + " to JSON");
  }
}

bool values_equal(const Value& left, const Value& right) {
  if (left.is_number() && right.is_number()) {
    if (left.is_float() || right.is_float()) return left.as_double() == right.as_double();
    return left.as_integer() == right.as_integer();
  }
  if (left.kind() != right.kind()) return false;
  switch (left.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return left.as_string() == right.as_string();
    case Value::Kind::List: {
      const auto& a = left.as_list().items;
      const auto& b = right.as_list().items;
      if (left.is_tuple() != right.is_tuple() || a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!values_equal(a[i], b[i])) return false;
      }
      return true;
    }
    case Value::Kind::Dict: {
      if (left.is_namespace() || right.is_namespace()) return left.identity() == right.identity();
      const auto& a = left.as_dict().entries;
      if (a.size() != right.as_dict().entries.size()) return false;
      for (const auto& [key, value] : a) {
        const Value* other = right.as_dict().find(key);
        if (!other || !values_equal(value, *other)) return false;
      }
      return true;
    }
    default:
      return left.identity() == right.identity();
  }
}

bool values_less(const Value& left, const Value& right) {
  if (left.is_number() && right.is_number()) {
    if (left.is_float() || right.is_float()) return left.as_double() < right.as_double();
    return left.as_integer() < right.as_integer();
  }
  if (left.is_string() && right.is_string()) {
    // UTF-8 byte order equals code point order.
    return left.as_string() < right.as_string();
  }
  if (left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple()) {
    const auto& a = left.as_list().items;
    const auto& b = right.as_list().items;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!values_equal(a[i], b[i])) return values_less(a[i], b[i]);
    }
    return a.size() < b.size();
  }
  throw TemplateFailure("'<' not supported between instances of '" + left.type_name() + "' and '" +
                        right.type_name() + "'");
}

}  // namespace mlx_cpp::jinja
