// The route table: every endpoint the server answers, in one place.
#include "server/route_context.h"

namespace mlx_cpp::server {

void register_routes(httplib::Server& http, RouteContext& context) {
  auto* ctx = &context;
  http.Post("/v1/chat/completions", guarded([ctx](const auto& request, auto& response) {
              handle_completion(*ctx, request, response, Endpoint::chat);
            }));
  http.Post("/v1/completions", guarded([ctx](const auto& request, auto& response) {
              handle_completion(*ctx, request, response, Endpoint::completion);
            }));
  http.Post("/v1/embeddings", guarded([ctx](const auto& request, auto& response) {
              handle_embeddings(*ctx, request, response);
            }));
  http.Post("/v1/messages", anthropic_route(context, /*count_tokens=*/false));
  http.Post("/v1/messages/count_tokens", anthropic_route(context, /*count_tokens=*/true));
  http.Post("/v1/responses", guarded([ctx](const auto& request, auto& response) {
              handle_create_response(*ctx, request, response);
            }));
  http.Get(R"(/v1/responses/([^/]+))", guarded([ctx](const auto& request, auto& response) {
             handle_get_response(*ctx, request.matches[1], response);
           }));
  http.Delete(R"(/v1/responses/([^/]+))", guarded([ctx](const auto& request, auto& response) {
                handle_delete_response(*ctx, request.matches[1], response);
              }));
  http.Get("/v1/models", guarded([ctx](const auto& request, auto& response) {
             handle_models(*ctx, request, response);
           }));
  http.Get(R"(/v1/models/(.+))", guarded([ctx](const auto& request, auto& response) {
             handle_models(*ctx, request, response);
           }));
  http.Get("/health",
           guarded([ctx](const auto&, auto& response) { handle_health(*ctx, response); }));
  http.Post("/tokenize", guarded([ctx](const auto& request, auto& response) {
              handle_tokenize(*ctx, request, response);
            }));
  http.Post("/detokenize", guarded([ctx](const auto& request, auto& response) {
              handle_detokenize(*ctx, request, response);
            }));
  http.Get("/metrics",
           guarded([ctx](const auto&, auto& response) { handle_metrics(*ctx, response); }));
  http.Get("/stats", guarded([ctx](const auto&, auto& response) { handle_stats(*ctx, response); }));
  http.Get("/v1/adapters",
           guarded([ctx](const auto&, auto& response) { handle_list_adapters(*ctx, response); }));
  http.Get("/v1/adapters/available", guarded([ctx](const auto&, auto& response) {
             handle_available_adapters(*ctx, response);
           }));
  http.Post("/v1/adapters", guarded([ctx](const auto& request, auto& response) {
              handle_mount_adapter(*ctx, request, response);
            }));
  http.Delete(R"(/v1/adapters/([^/]+))", guarded([ctx](const auto& request, auto& response) {
                handle_unmount_adapter(*ctx, request.matches[1], response);
              }));
  http.Post("/admin/cache/flush",
            guarded([ctx](const auto&, auto& response) { handle_cache_flush(*ctx, response); }));
}

}  // namespace mlx_cpp::server
