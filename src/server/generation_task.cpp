#include "server/generation_task.h"

#include <algorithm>

#include "server/connection_gate.h"
#include "template/render_interruption.h"

namespace mlx_cpp::server {

RenderedPrompt render_prompt(const Backend& backend, const CompletionRequest& request) {
  RenderedPrompt prompt;
  if (request.endpoint == Endpoint::chat) {
    const bool offer_tools = request.tool_choice != ToolChoice::none;
    // A template may run for seconds: nobody waits for it once the client
    // has hung up.
    jinja::RenderInterruption interruption(ConnectionGate::current_client_gone,
                                           "the client closed the connection");
    prompt.chat_text = backend.render_chat(
        request.messages, offer_tools ? request.tools : nlohmann::ordered_json(nullptr),
        request.template_kwargs);
    prompt.ids = backend.encode(prompt.chat_text, /*add_special_tokens=*/false);
  } else if (request.prompt_is_ids) {
    prompt.ids = request.prompt_ids;
  } else {
    prompt.ids = backend.encode(request.prompt_text, /*add_special_tokens=*/true);
  }
  return prompt;
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
                                  std::vector<int> prompt_ids,
                                  std::shared_ptr<ResultChannel> channel) {
  request.text.prompt_ids = std::move(prompt_ids);
  fit_to_context(backend, request);
  return {std::move(request.text), std::move(channel)};
}

}  // namespace mlx_cpp::server
