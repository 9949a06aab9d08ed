#include "engine/token_generator.h"

#include <mlx/memory.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>

#include "io/error.h"
#include "kernels/kernels.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

mx::array as_ids(const std::vector<int>& ids) {
  return mx::array(ids.data(), {static_cast<int>(ids.size())}, mx::int32);
}

}  // namespace

mx::array step_logprobs(const mx::array& logits, KernelMode kernels) {
  return kernels == KernelMode::fast
             ? kernels::log_softmax_fast(logits)
             : mx::subtract(logits, mx::logsumexp(logits, /*keepdims=*/true));
}

double GenerationStats::prompt_tokens_per_second() const {
  return prompt_seconds > 0 ? prompt_tokens / prompt_seconds : 0;
}

double GenerationStats::generation_tokens_per_second() const {
  return generation_seconds > 0 ? generated_tokens / generation_seconds : 0;
}

GenerationStats generate_tokens(const LanguageModel& model, CacheList& caches,
                                const std::vector<int>& prompt, const GenerationOptions& options,
                                const std::vector<int>& eos_token_ids,
                                const TokenCallback& on_token, const std::vector<int>& history,
                                const LogitsObserver& observe_logits) {
  if (prompt.empty()) throw Error("generate: the prompt has no tokens");
  for (int id : prompt)
    if (id < 0 || id >= model.vocab_size())
      throw Error("generate: token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(model.vocab_size()) + ")");
  if (options.max_tokens < 0) throw Error("generate: max_tokens must be >= 0");
  if (options.prefill_step_size < 1) throw Error("generate: prefill step must be >= 1");
  validate_sampler_options(options.sampler, model.vocab_size());
  validate_penalty_options(options.penalties, model.vocab_size());
  validate_kv_cache_scheme(options.kv_cache, model);

  const auto start = Clock::now();
  mx::reset_peak_memory();
  Sampler sampler(options.sampler);
  const bool penalize = options.penalties.any();
  std::vector<int> tokens = history;

  // One step: the logits of the last input position → (token [1], logprobs [vocab]).
  auto step = [&](const mx::array& input) {
    auto logits = model.forward(mx::expand_dims(input, 0), caches, options.adapters.get());
    apply_kv_cache_scheme(caches, options.kv_cache);
    const int length = logits.shape(1), vocab = logits.shape(2);
    logits = mx::reshape(mx::slice(logits, {0, length - 1, 0}, {1, length, vocab}), {1, vocab});
    if (penalize) logits = apply_logits_processors(logits, tokens, options.penalties);
    if (observe_logits) observe_logits(logits);
    auto logprobs = step_logprobs(logits, options.kernels);
    return std::pair{sampler(logprobs), mx::squeeze(logprobs, 0)};
  };

  // Prefill all but the last prompt token in chunks; only the caches are
  // evaluated, the chunk logits are never computed.
  size_t processed = 0;
  while (prompt.size() - processed > 1) {
    const size_t count = std::min<size_t>(options.prefill_step_size, prompt.size() - processed - 1);
    std::vector<int> chunk(prompt.begin() + processed, prompt.begin() + processed + count);
    model.forward(mx::expand_dims(as_ids(chunk), 0), caches, options.adapters.get());
    apply_kv_cache_scheme(caches, options.kv_cache);
    evaluate_cache_state(caches);
    tokens.insert(tokens.end(), chunk.begin(), chunk.end());
    processed += count;
    mx::clear_cache();
  }
  std::vector<int> rest(prompt.begin() + processed, prompt.end());
  tokens.insert(tokens.end(), rest.begin(), rest.end());
  auto [token, logprobs] = step(as_ids(rest));
  mx::async_eval({token, logprobs});

  GenerationStats stats;
  stats.prompt_tokens = static_cast<int>(prompt.size());
  Clock::time_point first_token_time;
  for (int n = 0;; ++n) {
    std::optional<std::pair<mx::array, mx::array>> next;
    if (n != options.max_tokens) {
      if (penalize) tokens.push_back(token.item<int>());  // history needs the value
      next = step(token);
      mx::async_eval({next->first, next->second});
    }
    if (n == 0) {
      mx::eval({token});
      stats.prompt_seconds = seconds_since(start);
      first_token_time = Clock::now();
    }
    if (n == options.max_tokens) {
      stats.finish_reason = FinishReason::length;
      break;
    }
    const int id = token.item<int>();
    stats.fed_ids.push_back(id);
    if (std::find(eos_token_ids.begin(), eos_token_ids.end(), id) != eos_token_ids.end()) {
      stats.finish_reason = FinishReason::stop;
      break;
    }
    stats.generated_tokens++;
    if (!on_token({id, logprobs})) {
      stats.finish_reason = FinishReason::cancelled;
      break;
    }
    if (n % 256 == 0) mx::clear_cache();
    token = next->first;
    logprobs = next->second;
  }
  stats.generation_seconds = std::chrono::duration<double>(Clock::now() - first_token_time).count();
  stats.peak_memory_bytes = mx::get_peak_memory();
  return stats;
}

}  // namespace mlx_cpp
