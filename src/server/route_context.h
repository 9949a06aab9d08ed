#pragma once
// What route handlers share, and the wrapper that turns any exception into
// an OpenAI-style error response (400 for invalid input, 500 for faults).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "server/engine_thread.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/response_shapes.h"
#include "server/responses_store.h"

namespace mlx_cpp::server {

struct RouteContext {
  const ServerConfig& config;
  EngineThread& engine;
  Metrics& metrics;
  std::atomic<int> open_responses{0};  // generation answers still being written
  ResponsesStore responses{};          // the Responses API's stored responses
};

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;

// Runs `handler`; an exception becomes the JSON error body of
// error_response_for() (500s are logged).
httplib::Server::Handler guarded(RouteHandler handler);

void set_json(httplib::Response& response, int status, const nlohmann::ordered_json& body);
void set_error(httplib::Response& response, const ErrorResponse& error);
// Extra words for this request's log line (token counts), kept per thread
// because httplib serves a request on one thread from routing to logging.
void set_log_detail(std::string detail);
std::string take_log_detail();

// The served model's facts; 503 while it loads or after it failed.
ModelInfo ready_model(const EngineThread& engine);

// Makes the response shape for a validated request; chat requests come
// with their answer parser (content, reasoning, tool calls); prompt_tokens
// is for APIs whose stream opens with the prompt's size (Anthropic's).
using ShapeMaker = std::function<std::unique_ptr<ResponseShape>(
    const CompletionRequest& request, std::optional<chat::OutputParser> parser, int prompt_tokens)>;

// Drives a validated request to its response, streamed or whole, for any
// API: renders and tokenizes the prompt, compiles its grammar, posts the
// job and writes what the shape makes of the generation.
void serve_generation(RouteContext& context, httplib::Response& response, const ModelInfo& model,
                      CompletionRequest request, const ShapeMaker& make_shape,
                      std::chrono::steady_clock::time_point arrival);

// Handlers (completion_handler.cpp, anthropic_handler.cpp, responses_handler.cpp,
// info_handlers.cpp).
void handle_completion(RouteContext& context, const httplib::Request& request,
                       httplib::Response& response, Endpoint endpoint);
// Anthropic's POST /v1/messages and /v1/messages/count_tokens, answering
// errors in Anthropic's shape (so they are not wrapped in guarded()).
httplib::Server::Handler anthropic_route(RouteContext& context, bool count_tokens);
// OpenAI's Responses API (responses_handler.cpp): POST /v1/responses, and
// GET and DELETE /v1/responses/{id} of a stored response.
void handle_create_response(RouteContext& context, const httplib::Request& request,
                            httplib::Response& response);
void handle_get_response(RouteContext& context, const std::string& id, httplib::Response& response);
void handle_delete_response(RouteContext& context, const std::string& id,
                            httplib::Response& response);
void handle_models(RouteContext& context, const httplib::Request& request,
                   httplib::Response& response);
void handle_health(RouteContext& context, httplib::Response& response);
void handle_tokenize(RouteContext& context, const httplib::Request& request,
                     httplib::Response& response);
void handle_detokenize(RouteContext& context, const httplib::Request& request,
                       httplib::Response& response);
void handle_metrics(RouteContext& context, httplib::Response& response);
void handle_stats(RouteContext& context, httplib::Response& response);
// POST /admin/cache/flush: every cached prompt written to the SSD cache.
void handle_cache_flush(RouteContext& context, httplib::Response& response);
// OpenAI's POST /v1/embeddings (embeddings_handler.cpp).
void handle_embeddings(RouteContext& context, const httplib::Request& request,
                       httplib::Response& response);
// Adapters (adapter_handlers.cpp).
void handle_list_adapters(RouteContext& context, httplib::Response& response);
void handle_available_adapters(RouteContext& context, httplib::Response& response);
void handle_mount_adapter(RouteContext& context, const httplib::Request& request,
                          httplib::Response& response);
void handle_unmount_adapter(RouteContext& context, const std::string& name,
                            httplib::Response& response);

void register_routes(httplib::Server& http, RouteContext& context);

}  // namespace mlx_cpp::server
