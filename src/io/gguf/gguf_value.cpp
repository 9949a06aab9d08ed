#include "io/gguf/gguf_value.h"

#include "io/error.h"

namespace mlx_cpp::gguf {

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

namespace {
[[noreturn]] void wrong_kind(const Value& value, const char* wanted) {
  throw Error(std::string("[gguf] metadata value is ") + value_type_name(value.type) +
              ", expected " + wanted);
}
}  // namespace

bool Value::is_integer() const {
  return std::holds_alternative<std::uint64_t>(data) || std::holds_alternative<std::int64_t>(data);
}

std::uint64_t Value::as_uint() const {
  if (const auto* unsigned_value = std::get_if<std::uint64_t>(&data)) return *unsigned_value;
  if (const auto* signed_value = std::get_if<std::int64_t>(&data)) {
    if (*signed_value < 0) {
      throw Error("[gguf] metadata value " + std::to_string(*signed_value) +
                  " is negative, expected an unsigned integer");
    }
    return static_cast<std::uint64_t>(*signed_value);
  }
  wrong_kind(*this, "an unsigned integer");
}

std::int64_t Value::as_int() const {
  if (const auto* signed_value = std::get_if<std::int64_t>(&data)) return *signed_value;
  if (const auto* unsigned_value = std::get_if<std::uint64_t>(&data)) {
    if (*unsigned_value > static_cast<std::uint64_t>(INT64_MAX)) {
      throw Error("[gguf] metadata value " + std::to_string(*unsigned_value) +
                  " does not fit a signed 64-bit integer");
    }
    return static_cast<std::int64_t>(*unsigned_value);
  }
  wrong_kind(*this, "an integer");
}

double Value::as_double() const {
  if (const auto* real = std::get_if<double>(&data)) return *real;
  if (const auto* unsigned_value = std::get_if<std::uint64_t>(&data)) {
    return static_cast<double>(*unsigned_value);
  }
  if (const auto* signed_value = std::get_if<std::int64_t>(&data)) {
    return static_cast<double>(*signed_value);
  }
  wrong_kind(*this, "a number");
}

bool Value::as_bool() const {
  if (const auto* flag = std::get_if<bool>(&data)) return *flag;
  wrong_kind(*this, "a bool");
}

const std::string& Value::as_string() const {
  if (const auto* text = std::get_if<std::string>(&data)) return *text;
  wrong_kind(*this, "a string");
}

const Value::Array& Value::as_array() const {
  if (const auto* elements = std::get_if<Array>(&data)) return *elements;
  wrong_kind(*this, "an array");
}

nlohmann::json Value::to_json() const {
  return std::visit(
      [](const auto& held) -> nlohmann::json {
        using Held = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<Held, Array>) {
          auto list = nlohmann::json::array();
          for (const auto& element : held) list.push_back(element.to_json());
          return list;
        } else {
          return nlohmann::json(held);
        }
      },
      data);
}

}  // namespace mlx_cpp::gguf
