#pragma once
// Server-sent events framing and the one JSON serializer of the server
// (invalid UTF-8, e.g. a token that is half a character, becomes U+FFFD
// instead of an exception).
#include <nlohmann/json.hpp>
#include <string>

namespace mlx_cpp::server {

std::string json_text(const nlohmann::ordered_json& value);
// "data: <json>\n\n": one event per JSON object, no newlines inside.
std::string sse_event(const nlohmann::ordered_json& value);
// The terminator OpenAI streams end with.
std::string sse_done();

}  // namespace mlx_cpp::server
