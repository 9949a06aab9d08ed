#pragma once
// OpenAI's Responses API request (POST /v1/responses), translated into the
// OpenAI chat body that parse_chat_request already validates, so it shares
// template rendering, tool_choice enforcement, structured output and answer
// parsing with the chat API. What only the Responses shape can get wrong
// (its items, flat tools, text.format) is checked here, naming its fields.
#include <nlohmann/json.hpp>

#include "server/completion_request.h"
#include "server/responses_store.h"

namespace mlx_cpp::server {

struct ResponsesChatBody {
  nlohmann::ordered_json chat;  // the OpenAI chat completion body
  // The items this response runs on: `previous_items`, then the request's
  // input (a string input as one user message item), for the store.
  nlohmann::ordered_json conversation;
};

// Translates a Responses body whose previous_response_id (if any) was
// found with `previous_items`; throws ApiError (400) naming the field.
ResponsesChatBody responses_chat_body(const nlohmann::ordered_json& body,
                                      const nlohmann::ordered_json& previous_items);

struct ResponsesRequest {
  CompletionRequest completion;
  nlohmann::ordered_json conversation;  // as in ResponsesChatBody
  // The request's settings as a response repeats them (instructions, tools,
  // tool_choice, temperature, text, reasoning, metadata, ...), defaults
  // filled in.
  nlohmann::ordered_json echoes;
  bool store = true;
};

// An unknown previous_response_id is a 400 naming it.
ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body, const ModelInfo& model,
                                         const ResponsesStore& store);

}  // namespace mlx_cpp::server
