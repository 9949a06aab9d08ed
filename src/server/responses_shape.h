#pragma once
// OpenAI's Responses API response: a response object whose output is a
// list of items (reasoning, message, function_call), whole, or streamed as
// its named events (response.created, response.output_item.added, ...
// response.completed), each with a growing sequence_number. A finished
// response is kept in the store when the request asked for it.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/output_parser.h"
#include "server/response_shapes.h"
#include "server/responses_store.h"

namespace mlx_cpp::server {

struct ResponsesShapeOptions {
  std::string model;
  nlohmann::ordered_json echoes;        // the request's settings the response repeats
  nlohmann::ordered_json conversation;  // the items it ran on, stored with its output
  ResponsesStore* store = nullptr;      // null: store is false
};

std::unique_ptr<ResponseShape> make_responses_shape(ResponsesShapeOptions options,
                                                    chat::OutputParser parser);

}  // namespace mlx_cpp::server
