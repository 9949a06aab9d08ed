#pragma once
// Typed reads of optional JSON request fields. Absent or null fields give
// std::nullopt; a present field of the wrong type or outside [min, max]
// throws a 400 ApiError naming the field, so handlers never see bad values.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mlx_cpp::server {

std::optional<double> optional_number(const nlohmann::ordered_json& body, const std::string& name,
                                      double min = -std::numeric_limits<double>::infinity(),
                                      double max = std::numeric_limits<double>::infinity());
std::optional<int64_t> optional_integer(const nlohmann::ordered_json& body, const std::string& name,
                                        int64_t min = std::numeric_limits<int64_t>::min(),
                                        int64_t max = std::numeric_limits<int64_t>::max());
std::optional<bool> optional_bool(const nlohmann::ordered_json& body, const std::string& name);
std::optional<std::string> optional_string(const nlohmann::ordered_json& body,
                                           const std::string& name);
// The field when it is an object (or absent/null: empty object).
nlohmann::ordered_json optional_object(const nlohmann::ordered_json& body, const std::string& name);

// JSON text of a request (its body, or a field that holds JSON as text)
// nested deeper than io/json_depth.h allows is a 400 naming `param`.
void refuse_deep_json(std::string_view text, const std::string& what,
                      const std::string& param = {});

// Parses a request body; malformed JSON or a non-object is a 400.
nlohmann::ordered_json parse_json_body(const std::string& text);

}  // namespace mlx_cpp::server
