#include "engine/perplexity.h"

#include <mlx/ops.h>

#include <cmath>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

PerplexityResult compute_perplexity(const LanguageModel& model, const std::vector<int>& tokens,
                                    int context, std::optional<int> bos_token_id,
                                    const KvCacheScheme& kv_cache) {
  if (context < 16) throw Error("perplexity: --ctx must be at least 16");
  validate_kv_cache_scheme(kv_cache, model);
  const int chunks = static_cast<int>(tokens.size()) / context;
  if (chunks < 1)
    throw Error("perplexity: the text has " + std::to_string(tokens.size()) +
                " tokens, fewer than one window of " + std::to_string(context));
  PerplexityResult result;
  double total = 0;
  const int first_scored = context / 2;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    std::vector<int> window(tokens.begin() + chunk * context,
                            tokens.begin() + (chunk + 1) * context);
    if (bos_token_id) window[0] = *bos_token_id;
    auto caches = model.make_caches();
    // Position i predicts token i + 1; score predictions of the second half.
    mx::array predicting = mx::array(0.0f);
    if (kv_cache.quantized()) {
      const int fed = first_scored - 1;
      model.forward(mx::array(window.data(), {1, fed}, mx::int32), caches);
      apply_kv_cache_scheme(caches, kv_cache);
      auto input = mx::array(window.data() + fed, {1, context - fed}, mx::int32);
      auto logits = mx::astype(model.forward(input, caches), mx::float32);
      predicting = mx::slice(logits, {0, 0, 0}, {1, context - 1 - fed, logits.shape(2)});
    } else {
      auto input = mx::array(window.data(), {1, context}, mx::int32);
      auto logits = mx::astype(model.forward(input, caches), mx::float32);  // [1, ctx, vocab]
      predicting = mx::slice(logits, {0, first_scored - 1, 0}, {1, context - 1, logits.shape(2)});
    }
    auto log_probs = mx::subtract(predicting, mx::logsumexp(predicting, -1, true));
    std::vector<int> targets(window.begin() + first_scored, window.end());
    auto target_ids =
        mx::array(targets.data(), {1, static_cast<int>(targets.size()), 1}, mx::int32);
    auto picked = mx::take_along_axis(log_probs, target_ids, -1);
    total -= mx::sum(picked).item<float>();
    result.scored_tokens += static_cast<int>(targets.size());
  }
  result.chunks = chunks;
  result.mean_negative_log_likelihood = total / result.scored_tokens;
  result.perplexity = std::exp(result.mean_negative_log_likelihood);
  return result;
}

}  // namespace mlx_cpp
