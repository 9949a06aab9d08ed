// POST /v1/responses, GET and DELETE /v1/responses/{id}: Responses API
// requests become CompletionRequests and go the way of every API
// (serve_generation), with the Responses shape; finished responses are kept
// in the server's store for GET, DELETE and previous_response_id. Errors
// keep OpenAI's shape, so these routes are wrapped in guarded().
#include <chrono>
#include <stdexcept>

#include "server/request_fields.h"
#include "server/responses_request.h"
#include "server/responses_shape.h"
#include "server/route_context.h"

namespace mlx_cpp::server {
namespace {

ApiError no_such_response(const std::string& id) {
  return ApiError(404, "invalid_request_error", "no stored response has the id '" + id + "'", {},
                  "not_found");
}

}  // namespace

void handle_create_response(RouteContext& context, const httplib::Request& http_request,
                            httplib::Response& response) {
  const auto arrival = std::chrono::steady_clock::now();
  const ModelInfo model = ready_model(context.engine);
  auto request =
      parse_responses_request(parse_json_body(http_request.body), model, context.responses);
  ResponsesShapeOptions options{model.id, std::move(request.echoes),
                                std::move(request.conversation),
                                request.store ? &context.responses : nullptr};
  serve_generation(
      context, response, model, std::move(request.completion),
      [&options](const CompletionRequest&, std::optional<chat::OutputParser> parser, int) {
        // A chat request always comes with its parser.
        if (!parser) throw std::logic_error("a Responses request without an answer parser");
        return make_responses_shape(std::move(options), std::move(parser).value());
      },
      arrival);
}

void handle_get_response(RouteContext& context, const std::string& id,
                         httplib::Response& response) {
  auto stored = context.responses.find(id);
  if (!stored) throw no_such_response(id);
  set_json(response, 200, stored->response);
}

void handle_delete_response(RouteContext& context, const std::string& id,
                            httplib::Response& response) {
  if (!context.responses.erase(id)) throw no_such_response(id);
  set_json(response, 200, {{"id", id}, {"object", "response.deleted"}, {"deleted", true}});
}

}  // namespace mlx_cpp::server
