#include "model/logits_processors.h"

#include <mlx/ops.h>

#include <algorithm>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// Occurrences of each vocabulary id among the last context_size tokens.
std::vector<int> recent_counts(const std::vector<int>& history, int context_size, int vocab) {
  std::vector<int> counts(vocab, 0);
  const size_t start = history.size() > size_t(context_size) ? history.size() - context_size : 0;
  for (size_t i = start; i < history.size(); ++i)
    if (history[i] >= 0 && history[i] < vocab) counts[history[i]]++;
  return counts;
}

mx::array mask_of(const std::vector<int>& counts, int at_least) {
  std::vector<uint8_t> flags(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) flags[i] = counts[i] >= at_least;
  return mx::array(reinterpret_cast<const bool*>(flags.data()), {1, static_cast<int>(flags.size())},
                   mx::bool_);
}

mx::array scalar_like(float value, const mx::array& like) {
  return mx::array(value, like.dtype());
}

}  // namespace

void validate_penalty_options(const PenaltyOptions& options, int vocab_size) {
  for (const auto& [id, bias] : options.logit_bias)
    if (id < 0 || id >= vocab_size)
      throw Error("logit_bias: token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(vocab_size) + ")");
  if (options.repetition_penalty && *options.repetition_penalty < 0)
    throw Error("repetition_penalty must be >= 0");
  for (int size : {options.repetition_context_size, options.presence_context_size,
                   options.frequency_context_size})
    if (size < 1) throw Error("penalty context sizes must be >= 1");
}

mx::array apply_logits_processors(const mx::array& logits, const std::vector<int>& history,
                                  const PenaltyOptions& options) {
  const int vocab = logits.shape(-1);
  auto result = logits;
  if (!options.logit_bias.empty()) {
    // A dense bias in the logits' dtype: adding 0 leaves other entries exact.
    std::vector<float> dense(vocab, 0.0f);
    for (const auto& [id, bias] : options.logit_bias) dense[id] = bias;
    auto bias = mx::astype(mx::array(dense.data(), {1, vocab}, mx::float32), result.dtype());
    result = mx::add(result, bias);
  }
  if (history.empty()) return result;
  if (options.repetition_penalty && *options.repetition_penalty != 0) {
    auto seen = mask_of(recent_counts(history, options.repetition_context_size, vocab), 1);
    auto penalty = scalar_like(*options.repetition_penalty, result);
    auto penalized = mx::where(mx::less(result, scalar_like(0.0f, result)),
                               mx::multiply(result, penalty), mx::divide(result, penalty));
    result = mx::where(seen, penalized, result);
  }
  if (options.presence_penalty && *options.presence_penalty != 0) {
    auto seen = mask_of(recent_counts(history, options.presence_context_size, vocab), 1);
    result = mx::where(seen, mx::subtract(result, scalar_like(*options.presence_penalty, result)),
                       result);
  }
  if (options.frequency_penalty && *options.frequency_penalty != 0) {
    // A scatter-subtract applies the penalty once per occurrence, rounding
    // after each; repeat the subtraction as many times as the top count.
    auto counts = recent_counts(history, options.frequency_context_size, vocab);
    const int most = *std::max_element(counts.begin(), counts.end());
    auto penalty = scalar_like(*options.frequency_penalty, result);
    for (int round = 1; round <= most; ++round)
      result = mx::where(mask_of(counts, round), mx::subtract(result, penalty), result);
  }
  return result;
}

}  // namespace mlx_cpp
