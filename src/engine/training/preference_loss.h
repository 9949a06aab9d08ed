#pragma once
// Preference tuning's losses over batches whose rows come in pairs: row
// 2i is a prompt with its chosen answer, row 2i + 1 the same prompt with
// the rejected one, each scored from its offset to its length (the
// answer's tokens).
//
// DPO (Rafailov et al. 2023), the sigmoid form:
//   -log σ(β · ((log π(c) − log π_ref(c)) − (log π(r) − log π_ref(r))))
// with each log π the sum of the answer's token log-probabilities, the
// reference being the model without the adapter being trained.
// ORPO (Hong et al. 2024):
//   NLL(c) − β · log σ(log odds(c) − log odds(r)),
//   log odds(y) = ℓ(y) − log(1 − exp ℓ(y)), ℓ the mean token log-probability,
// NLL(c) the cross entropy over the chosen answers' tokens.
// Both are averaged over the pairs.
#include <mlx/array.h>

#include <optional>
#include <string>

namespace mlx_cpp {

enum class TrainingMode { sft, dpo, orpo };

// "sft", "dpo", "orpo"; throws Error for anything else.
TrainingMode parse_training_mode(const std::string& name);
std::string training_mode_name(TrainingMode mode);

// Per row: the summed log-probabilities of the scored tokens and their
// count, from logits [rows, L, vocab] of inputs whose next tokens are
// targets [rows, L] and mask [rows, L] (true where scored). Float32.
struct AnswerLogProbs {
  mlx::core::array sums;
  mlx::core::array counts;
};
AnswerLogProbs answer_log_probs(const mlx::core::array& logits, const mlx::core::array& targets,
                                const mlx::core::array& mask);

// The loss of one batch of pairs. reference: the reference model's log
// probabilities (DPO only; taken as constants).
mlx::core::array preference_loss(TrainingMode mode, float beta, const AnswerLogProbs& policy,
                                 const std::optional<AnswerLogProbs>& reference);

}  // namespace mlx_cpp
