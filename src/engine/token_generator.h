#pragma once
// The decode loop, one visible function like mlx-lm's generate_step: the
// prompt is prefilled in chunks (only the caches are evaluated), the last
// prompt token produces the first logits, and step n+1 is scheduled with
// async_eval before token n is read, so the host never waits on an idle
// device.
#include <mlx/array.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/compute_device.h"
#include "engine/kv_cache_scheme.h"
#include "engine/speculative/speculative_options.h"
#include "model/language_model.h"
#include "model/logits_processors.h"
#include "model/sampler.h"

namespace mlx_cpp {

// Prompt tokens per prefill chunk. The stock path takes mlx-lm's 2048, as it
// must to stay bit-exact with it; the fast path on the CPU takes 256-token
// chunks, which bounds the activations a long prompt holds at once (on
// SmolLM2-135M, a 512-token prompt peaks 27 MiB lower; docs/benchmarks.md).
// A GPU needs wide matmuls to fill its cores and has the memory for them:
// there the fast path keeps 2048 (256-token chunks cost a third of the
// prefill speed at 2048 tokens on an H200).
constexpr int kStockPrefillStep = 2048;
constexpr int kFastCpuPrefillStep = 256;
inline int default_prefill_step(KernelMode kernels) {
  return kernels == KernelMode::fast && !computing_on_gpu() ? kFastCpuPrefillStep
                                                             : kStockPrefillStep;
}

struct GenerationOptions {
  int max_tokens = 256;
  int prefill_step_size = kStockPrefillStep;
  // fast: the log-softmax of each step's logits takes the own kernel
  // (kernels::log_softmax_fast) instead of MLX's subtract(logsumexp).
  KernelMode kernels = KernelMode::stock;
  SamplerOptions sampler;
  PenaltyOptions penalties;
  SpeculativeOptions speculative;
  KvCacheScheme kv_cache;
  // The adapters every forward of this generation runs with (none: the
  // base model); shared, so an adapter unmounted meanwhile lives on until
  // the generations using it end.
  std::shared_ptr<const AdapterStack> adapters;
};

struct GeneratedToken {
  int id = 0;
  mlx::core::array logprobs;  // [vocab], after processors, log-softmaxed
};

enum class FinishReason { none, stop, length, cancelled };

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double prompt_seconds = 0;      // until the first token is available
  double generation_seconds = 0;  // from the first token to the last
  size_t peak_memory_bytes = 0;
  FinishReason finish_reason = FinishReason::none;
  // Every token read back from the sampler, including a final EOS. Each of
  // them was fed to the model (the step after it was already scheduled), so
  // the caches hold prompt + fed_ids.
  std::vector<int> fed_ids;
  // Speculative decoding: which source drafted, the tokens it proposed,
  // those of them the verify accepted, in how many verifies (of at least
  // one draft).
  DraftKind draft_kind = DraftKind::none;
  int draft_proposed = 0, draft_accepted = 0, draft_steps = 0;
  double prompt_tokens_per_second() const;
  double generation_tokens_per_second() const;
};

// A step's logits [1, vocab] → log-probabilities: the own kernel on the
// fast path, MLX's logits - logsumexp(logits) (as mlx-lm) on the stock one.
mlx::core::array step_logprobs(const mlx::core::array& logits, KernelMode kernels);

// Sees the logits of every step after the processors (tests use it to
// compare with mlx-lm's own loop).
using LogitsObserver = std::function<void(const mlx::core::array& logits)>;
// Receives each token; returning false stops generation (stop strings,
// cancelled clients).
using TokenCallback = std::function<bool(const GeneratedToken& token)>;

// Runs generation on `caches` (which may already hold a prefix: then
// `prompt` holds only the new tokens and `history` the tokens before them,
// for penalties). Stops at an EOS id, max_tokens, or when the callback
// returns false.
GenerationStats generate_tokens(const LanguageModel& model, CacheList& caches,
                                const std::vector<int>& prompt, const GenerationOptions& options,
                                const std::vector<int>& eos_token_ids,
                                const TokenCallback& on_token, const std::vector<int>& history = {},
                                const LogitsObserver& observe_logits = {});

}  // namespace mlx_cpp
