#pragma once
// Anthropic's Messages API response: a message of content blocks
// (thinking, text, tool_use) whole, or streamed as its named events
// (message_start, content_block_start/delta/stop, message_delta,
// message_stop), with errors in its {"type": "error", "error": ...} shape.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "server/api_error.h"
#include "server/backend.h"
#include "server/response_shapes.h"

namespace mlx_cpp::server {

// The OpenAI-style error as Anthropic writes it; its type follows the
// HTTP status as Anthropic's do (400 invalid_request_error, 401
// authentication_error, 503 overloaded_error, 500 api_error, ...).
nlohmann::ordered_json anthropic_error_body(const ErrorResponse& error);

struct AnthropicShapeOptions {
  std::string model;
  int prompt_tokens = 0;
  std::vector<std::string> stop_sequences;  // the request's, to name the one that matched
  const Backend* backend = nullptr;         // decodes the completion to find that match
};

std::unique_ptr<ResponseShape> make_anthropic_shape(AnthropicShapeOptions options,
                                                    chat::OutputParser parser);

}  // namespace mlx_cpp::server
