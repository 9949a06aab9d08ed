#pragma once
// The chat-only fields of a /v1/chat/completions request: messages (with
// assistant tool calls and tool results), tools, tool_choice,
// parallel_tool_calls, reasoning_effort and chat_template_kwargs.
#include "server/completion_request.h"

namespace mlx_cpp::server {

// Fills request.messages, tools, tool_choice, parallel_tool_calls and
// template_kwargs; throws ApiError (400) naming the field.
void parse_chat_fields(const nlohmann::ordered_json& body, const ModelInfo& model,
                       CompletionRequest& request);

}  // namespace mlx_cpp::server
