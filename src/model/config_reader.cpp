#include "model/config_reader.h"

#include "io/error.h"

namespace mlx_cpp {

namespace {
const nlohmann::json kNull = nullptr;
}

ConfigReader::ConfigReader(const nlohmann::json& config) : config_(config) {}

void ConfigReader::fail(const char* key, const char* expected) const {
  std::string model_type = config_.value("model_type", std::string("?"));
  throw Error("config.json (model_type " + model_type + "): '" + key + "' must be " + expected);
}

bool ConfigReader::has(const char* key) const {
  keys_read_.insert(key);
  return config_.contains(key) && !config_[key].is_null();
}

const nlohmann::json& ConfigReader::value(const char* key) const {
  keys_read_.insert(key);
  return config_.contains(key) ? config_[key] : kNull;
}

int ConfigReader::required_int(const char* key) const {
  if (!has(key) || !config_[key].is_number_integer()) fail(key, "an integer");
  auto value = config_[key].get<int64_t>();
  if (value <= 0 || value > (1 << 30)) fail(key, "a positive integer below 2^30");
  return static_cast<int>(value);
}

int ConfigReader::int_or(const char* key, int fallback) const {
  return has(key) ? required_int(key) : fallback;
}

std::optional<int> ConfigReader::optional_int(const char* key) const {
  if (!has(key)) return std::nullopt;
  return required_int(key);
}

double ConfigReader::required_number(const char* key) const {
  if (!has(key) || !config_[key].is_number()) fail(key, "a number");
  return config_[key].get<double>();
}

double ConfigReader::number_or(const char* key, double fallback) const {
  return has(key) ? required_number(key) : fallback;
}

bool ConfigReader::required_bool(const char* key) const {
  if (!has(key) || !config_[key].is_boolean()) fail(key, "true or false");
  return config_[key].get<bool>();
}

bool ConfigReader::bool_or(const char* key, bool fallback) const {
  return has(key) ? required_bool(key) : fallback;
}

const nlohmann::json& ConfigReader::object_or_null(const char* key) const {
  if (!has(key)) return kNull;
  if (!config_[key].is_object()) fail(key, "an object");
  return config_[key];
}

}  // namespace mlx_cpp
