#pragma once
// One GGUF metadata value: a scalar, a string, or an array of values (arrays
// may nest). Accessors throw Error naming the expected and actual kinds.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace mlx_cpp::gguf {

enum class ValueType : std::uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* value_type_name(ValueType type);

struct Value {
  using Array = std::vector<Value>;

  ValueType type = ValueType::kUint8;
  ValueType element_type = ValueType::kUint8;  // meaningful for arrays only
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, Array> data;

  bool is_integer() const;
  bool is_array() const { return type == ValueType::kArray; }
  // Any integer type that fits; throws on negative values or non-integers.
  std::uint64_t as_uint() const;
  std::int64_t as_int() const;
  // Integers and floats alike.
  double as_double() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const Array& as_array() const;

  nlohmann::json to_json() const;
};

}  // namespace mlx_cpp::gguf
