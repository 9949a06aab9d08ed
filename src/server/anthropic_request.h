#pragma once
// Anthropic's Messages API request (POST /v1/messages and its
// count_tokens), translated into the OpenAI chat body that
// parse_chat_request already validates, so both APIs share template
// rendering, tool_choice enforcement and answer parsing. What only
// Anthropic's shape can get wrong is checked here, naming its own fields.
#include <nlohmann/json.hpp>

#include "server/completion_request.h"

namespace mlx_cpp::server {

enum class AnthropicRoute { messages, count_tokens };

// The OpenAI chat completion body equivalent to an Anthropic request;
// throws ApiError (400) naming the Anthropic field at fault. count_tokens
// bodies may leave out max_tokens.
nlohmann::ordered_json openai_chat_body(const nlohmann::ordered_json& body, AnthropicRoute route);

CompletionRequest parse_anthropic_request(const nlohmann::ordered_json& body,
                                          const ModelInfo& model, AnthropicRoute route);

}  // namespace mlx_cpp::server
