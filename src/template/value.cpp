#include "template/value.h"

#include <algorithm>
#include <cmath>

#include "template/python_text.h"
#include "template/template_error.h"

namespace mlx_cpp::jinja {
namespace {

int checked_depth(int depth) {
  if (depth > kMaxContainerDepth)
    throw TemplateFailure("lists and dicts nest deeper than " + std::to_string(kMaxContainerDepth) +
                          " levels");
  return depth;
}

// Whether `value` is `dict` or holds it somewhere; `seen` keeps a shared
// object from being walked twice.
bool holds(const Value& value, const DictObject* dict, std::vector<const void*>& seen) {
  if (!value.is_list() && !value.is_dict()) return false;
  if (value.identity() == dict) return true;
  if (std::find(seen.begin(), seen.end(), value.identity()) != seen.end()) return false;
  seen.push_back(value.identity());
  if (value.is_list()) {
    for (const auto& item : value.as_list().items)
      if (holds(item, dict, seen)) return true;
    return false;
  }
  for (const auto& entry : value.as_dict().entries)
    if (holds(entry.second, dict, seen)) return true;
  return false;
}

// repr() into `out`, checking after each item that the text still fits the
// render's budget: shared lists can print far more than they hold.
void append_repr(std::string& out, const Value& value);

}  // namespace

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
  std::vector<const void*> seen;
  if (holds(value, this, seen)) throw TemplateFailure("a namespace cannot hold itself");
  depth = std::max(depth, checked_depth(value.depth() + 1));
  for (auto& entry : entries) {
    if (values_equal(entry.first, key)) {
      charge_built_bytes(stored_bytes(value));
      entry.second = std::move(value);
      return;
    }
  }
  charge_built_bytes(stored_bytes(key) + stored_bytes(value));
  entries.emplace_back(key, std::move(value));
}

size_t stored_bytes(const Value& value) {
  return sizeof(Value) + (value.is_string() ? value.as_string().size() : 0);
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
  size_t bytes = 0;
  for (const auto& item : items) bytes += stored_bytes(item);
  charge_built_bytes(bytes);
  auto list = std::make_shared<ListObject>();
  for (const auto& item : items)
    list->depth = std::max(list->depth, checked_depth(item.depth() + 1));
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
      DictObject& entries = result.as_dict();
      for (const auto& [key, item] : json.items()) {
        entries.entries.emplace_back(Value(key), from_json(item));
        entries.depth =
            std::max(entries.depth, checked_depth(entries.entries.back().second.depth() + 1));
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

int Value::depth() const {
  if (is_list()) return list_->depth;
  if (is_dict()) return dict_->depth;
  return 0;
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
  std::string out;
  append_repr(out, *this);
  return out;
}

namespace {

void append_repr(std::string& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return;
    case Value::Kind::None:
      out += "None";
      return;
    case Value::Kind::Boolean:
      out += value.as_boolean() ? "True" : "False";
      return;
    case Value::Kind::Integer:
      out += std::to_string(value.as_integer());
      return;
    case Value::Kind::Float:
      out += python_float_repr(value.as_double());
      return;
    case Value::Kind::String:
      out += python_string_repr(value.as_string());
      return;
    case Value::Kind::List: {
      const ListObject& list = value.as_list();
      out += list.is_tuple ? "(" : "[";
      for (size_t i = 0; i < list.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, list.items[i]);
        ensure_room_for(out.size());
      }
      if (list.is_tuple && list.items.size() == 1) out += ",";
      out += list.is_tuple ? ")" : "]";
      return;
    }
    case Value::Kind::Dict: {
      const DictObject& dict = value.as_dict();
      out += dict.is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict.entries.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, dict.entries[i].first);
        out += ": ";
        append_repr(out, dict.entries[i].second);
        ensure_room_for(out.size());
      }
      out += dict.is_namespace ? "}>" : "}";
      return;
    }
    case Value::Kind::Function:
      out += "<function " + value.as_function().name + ">";
      return;
  }
}

}  // namespace

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
