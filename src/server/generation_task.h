#pragma once
// The engine-thread side of one completion request: tokenize the prompt,
// check it fits the context, then generate, posting events to the task's
// ResultChannel (see result_channel.h for their order).
#include <memory>

#include "server/completion_request.h"
#include "server/engine_thread.h"

namespace mlx_cpp::server {

EngineTask make_generation_task(CompletionRequest request, std::shared_ptr<ResultChannel> channel);

// The prompt's token ids: the chat template rendered then encoded without
// special tokens (the template writes them), or the completion prompt.
std::vector<int> prompt_token_ids(const Backend& backend, const CompletionRequest& request);

}  // namespace mlx_cpp::server
