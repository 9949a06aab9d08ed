#pragma once
// Typed access to config.json fields with errors that name the field, the
// expected type and the model type.
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

namespace mlx_cpp {

class ConfigReader {
 public:
  explicit ConfigReader(const nlohmann::json& config);

  int required_int(const char* key) const;
  int int_or(const char* key, int fallback) const;
  std::optional<int> optional_int(const char* key) const;
  double required_number(const char* key) const;
  double number_or(const char* key, double fallback) const;
  bool bool_or(const char* key, bool fallback) const;
  bool required_bool(const char* key) const;
  bool has(const char* key) const;
  const nlohmann::json& object_or_null(const char* key) const;
  // The field as it stands (null when absent), for shapes the typed
  // readers do not cover (lists, strings).
  const nlohmann::json& value(const char* key) const;
  const nlohmann::json& raw() const { return config_; }
  // Every key a reader was asked for (`mlx-cpp inspect` lists the others).
  const std::set<std::string>& keys_read() const { return keys_read_; }

 private:
  [[noreturn]] void fail(const char* key, const char* expected) const;
  const nlohmann::json& config_;
  mutable std::set<std::string> keys_read_;
};

}  // namespace mlx_cpp
