#include "server/generation_task.h"

#include <algorithm>

namespace mlx_cpp::server {

std::vector<int> prompt_token_ids(const Backend& backend, const CompletionRequest& request) {
  if (request.endpoint == Endpoint::chat) {
    std::string text =
        backend.render_chat(request.messages, request.tools, request.template_kwargs);
    return backend.encode(text, /*add_special_tokens=*/false);
  }
  if (request.prompt_is_ids) return request.prompt_ids;
  return backend.encode(request.prompt_text, /*add_special_tokens=*/true);
}

namespace {

// Fails with 400 when the prompt leaves no room to generate; otherwise
// limits max_tokens to the room left (finish_reason "length" at the end).
void fit_to_context(const Backend& backend, CompletionRequest& request) {
  const int prompt = static_cast<int>(request.text.prompt_ids.size());
  const int context = backend.context_size();
  if (prompt == 0) throw invalid_request("the prompt is empty after tokenization", "messages");
  if (prompt >= context)
    throw ApiError(400, "invalid_request_error",
                   "the prompt has " + std::to_string(prompt) + " tokens but the context holds " +
                       std::to_string(context) + " (prompt and completion together)",
                   request.endpoint == Endpoint::chat ? "messages" : "prompt",
                   "context_length_exceeded");
  auto& max_tokens = request.text.options.max_tokens;
  max_tokens = std::min(max_tokens, context - prompt);
}

}  // namespace

GenerationJob make_generation_job(const Backend& backend, CompletionRequest request,
                                  std::shared_ptr<ResultChannel> channel) {
  request.text.prompt_ids = prompt_token_ids(backend, request);
  fit_to_context(backend, request);
  return {std::move(request.text), std::move(channel)};
}

}  // namespace mlx_cpp::server
