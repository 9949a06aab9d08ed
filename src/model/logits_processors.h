#pragma once
// Logits processors in mlx-lm's order: logit bias, then repetition,
// presence and frequency penalties, each over the last `context_size`
// tokens of the history (prompt + generated). Results equal mlx-lm's
// gather/scatter formulation value for value, including the repeated
// rounding of a frequency penalty applied once per occurrence.
#include <mlx/array.h>

#include <map>
#include <optional>
#include <vector>

namespace mlx_cpp {

struct PenaltyOptions {
  std::map<int, float> logit_bias;
  std::optional<float> repetition_penalty;
  int repetition_context_size = 20;
  std::optional<float> presence_penalty;
  int presence_context_size = 20;
  std::optional<float> frequency_penalty;
  int frequency_context_size = 20;

  bool any() const {
    return !logit_bias.empty() || (repetition_penalty && *repetition_penalty != 0) ||
           (presence_penalty && *presence_penalty != 0) ||
           (frequency_penalty && *frequency_penalty != 0);
  }
};

// Throws Error for ids outside the vocabulary or negative penalties.
void validate_penalty_options(const PenaltyOptions& options, int vocab_size);

// logits: [1, vocab]; history: every token so far. Returns new logits.
mlx::core::array apply_logits_processors(const mlx::core::array& logits,
                                         const std::vector<int>& history,
                                         const PenaltyOptions& options);

}  // namespace mlx_cpp
