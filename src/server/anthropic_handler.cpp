// POST /v1/messages and /v1/messages/count_tokens: Anthropic's requests
// become CompletionRequests and go the way of every API (serve_generation),
// with Anthropic's response shape and error bodies.
#include <chrono>
#include <iostream>

#include "server/anthropic_request.h"
#include "server/anthropic_shape.h"
#include "server/generation_task.h"
#include "server/request_fields.h"
#include "server/route_context.h"

namespace mlx_cpp::server {
namespace {

void handle_messages(RouteContext& context, const httplib::Request& http_request,
                     httplib::Response& response) {
  const auto arrival = std::chrono::steady_clock::now();
  const ModelInfo model = ready_model(context.engine);
  auto request =
      parse_anthropic_request(parse_json_body(http_request.body), model, AnthropicRoute::messages);
  const Backend* backend = context.engine.backend();
  serve_generation(
      context, response, model, std::move(request),
      [&model, backend](const CompletionRequest& request, std::optional<chat::OutputParser> parser,
                        int prompt_tokens) {
        AnthropicShapeOptions options{model.id, prompt_tokens, request.text.stop, backend};
        return make_anthropic_shape(std::move(options), std::move(*parser));
      },
      arrival);
}

// The prompt's size as the model would be given it: rendered by its
// template (tools included) and tokenized.
void handle_count_tokens(RouteContext& context, const httplib::Request& http_request,
                         httplib::Response& response) {
  const ModelInfo model = ready_model(context.engine);
  auto request = parse_anthropic_request(parse_json_body(http_request.body), model,
                                         AnthropicRoute::count_tokens);
  const Backend* backend = context.engine.backend();
  if (!backend) throw ApiError(503, "unavailable_error", "the model is still loading");
  const auto prompt = render_prompt(*backend, request);
  set_json(response, 200, {{"input_tokens", prompt.ids.size()}});
}

// An error already written in OpenAI's shape (by serve_generation, whose
// generation was refused before it started) rewritten in Anthropic's.
void rewrite_error_body(httplib::Response& response) {
  if (response.status < 400 || response.body.empty()) return;
  auto body = nlohmann::ordered_json::parse(response.body, nullptr, false);
  if (body.is_discarded() || !body.contains("error") || body.value("type", "") == "error") return;
  set_json(response, response.status, anthropic_error_body({response.status, body}));
}

}  // namespace

httplib::Server::Handler anthropic_route(RouteContext& context, bool count_tokens) {
  return [&context, count_tokens](const httplib::Request& request, httplib::Response& response) {
    try {
      if (count_tokens)
        handle_count_tokens(context, request, response);
      else
        handle_messages(context, request, response);
      rewrite_error_body(response);
    } catch (...) {
      auto error = error_response_for(std::current_exception());
      if (error.status == 500)
        std::cerr << "error: " << request.method << ' ' << request.path << ": "
                  << error.body["error"]["message"].get<std::string>() << std::endl;
      set_json(response, error.status, anthropic_error_body(error));
    }
  };
}

}  // namespace mlx_cpp::server
