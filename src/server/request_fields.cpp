#include "server/request_fields.h"

#include <cmath>
#include <sstream>

#include "io/json_depth.h"
#include "server/api_error.h"

namespace mlx_cpp::server {
namespace {

const nlohmann::ordered_json* present(const nlohmann::ordered_json& body, const std::string& name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string range_text(double min, double max) {
  std::ostringstream text;
  text << "[" << min << ", " << max << "]";
  return text.str();
}

}  // namespace

std::optional<double> optional_number(const nlohmann::ordered_json& body, const std::string& name,
                                      double min, double max) {
  const auto* value = present(body, name);
  if (!value) return std::nullopt;
  if (!value->is_number()) throw invalid_request("'" + name + "' must be a number", name);
  double number = value->get<double>();
  if (!std::isfinite(number) || number < min || number > max)
    throw invalid_request("'" + name + "' must be in " + range_text(min, max), name);
  return number;
}

std::optional<int64_t> optional_integer(const nlohmann::ordered_json& body, const std::string& name,
                                        int64_t min, int64_t max) {
  const auto* value = present(body, name);
  if (!value) return std::nullopt;
  // 3.0 is accepted as 3 (JavaScript clients cannot tell them apart).
  bool whole_float = value->is_number_float() && std::isfinite(value->get<double>()) &&
                     std::trunc(value->get<double>()) == value->get<double>() &&
                     std::fabs(value->get<double>()) < 9.0e15;
  if (!value->is_number_integer() && !whole_float)
    throw invalid_request("'" + name + "' must be an integer", name);
  int64_t number = whole_float ? static_cast<int64_t>(value->get<double>())
                   : value->is_number_unsigned()
                       ? static_cast<int64_t>(std::min<uint64_t>(
                             value->get<uint64_t>(), std::numeric_limits<int64_t>::max()))
                       : value->get<int64_t>();
  if (number < min || number > max)
    throw invalid_request(
        "'" + name + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
        name);
  return number;
}

std::optional<bool> optional_bool(const nlohmann::ordered_json& body, const std::string& name) {
  const auto* value = present(body, name);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) throw invalid_request("'" + name + "' must be a boolean", name);
  return value->get<bool>();
}

std::optional<std::string> optional_string(const nlohmann::ordered_json& body,
                                           const std::string& name) {
  const auto* value = present(body, name);
  if (!value) return std::nullopt;
  if (!value->is_string()) throw invalid_request("'" + name + "' must be a string", name);
  return value->get<std::string>();
}

nlohmann::ordered_json optional_object(const nlohmann::ordered_json& body,
                                       const std::string& name) {
  const auto* value = present(body, name);
  if (!value) return nlohmann::ordered_json::object();
  if (!value->is_object()) throw invalid_request("'" + name + "' must be an object", name);
  return *value;
}

void refuse_deep_json(std::string_view text, const std::string& what, const std::string& param) {
  try {
    check_json_depth(text, what);
  } catch (const Error& error) {
    throw invalid_request(error.what(), param);
  }
}

nlohmann::ordered_json parse_json_body(const std::string& text) {
  refuse_deep_json(text, "the request body");
  nlohmann::ordered_json body;
  try {
    body = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::exception& error) {  // syntax, or a number out of range
    throw invalid_request(std::string("request body is not valid JSON: ") + error.what());
  }
  if (!body.is_object()) throw invalid_request("request body must be a JSON object");
  return body;
}

}  // namespace mlx_cpp::server
