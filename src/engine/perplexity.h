#pragma once
// Perplexity over a token sequence, chunked like llama.cpp's perplexity
// tool: the text is cut into windows of `context` tokens, each window
// starts with BOS (when the model has one) and only its second half is
// scored, so every scored token sees at least context/2 tokens before it.
// Under a quantized KV scheme the unscored half is fed first and the cache
// switched as the scheme says, so the scored half reads its keys and values
// as a generation would.
#include <optional>
#include <vector>

#include "engine/kv_cache_scheme.h"
#include "model/language_model.h"

namespace mlx_cpp {

struct PerplexityResult {
  double perplexity = 0;
  double mean_negative_log_likelihood = 0;
  int scored_tokens = 0;
  int chunks = 0;
};

PerplexityResult compute_perplexity(const LanguageModel& model, const std::vector<int>& tokens,
                                    int context, std::optional<int> bos_token_id,
                                    const KvCacheScheme& kv_cache = {});

}  // namespace mlx_cpp
