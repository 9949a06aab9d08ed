#pragma once
// The HTTP-thread side of one completion request before it reaches the
// engine: render and tokenize the prompt, check it fits the context, and
// make it a GenerationJob (events: see result_channel.h).
#include <memory>

#include "server/completion_request.h"
#include "server/engine_thread.h"

namespace mlx_cpp::server {

struct RenderedPrompt {
  std::string chat_text;  // chat: what the template wrote (the answer parser reads its end)
  std::vector<int> ids;
};

// The prompt's token ids: the chat template rendered (tools left out when
// tool_choice is none) then encoded without special tokens (the template
// writes them), or the completion prompt.
RenderedPrompt render_prompt(const Backend& backend, const CompletionRequest& request);

// Throws ApiError 400 when the prompt is empty or leaves no room to
// generate; max_tokens is limited to the room left.
GenerationJob make_generation_job(const Backend& backend, CompletionRequest request,
                                  std::vector<int> prompt_ids,
                                  std::shared_ptr<ResultChannel> channel);

}  // namespace mlx_cpp::server
