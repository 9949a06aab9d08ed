#include "engine/training/preference_loss.h"

#include <mlx/ops.h>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

// Rows 0, 2, 4, … (first = 0) or 1, 3, 5, … (first = 1).
mx::array every_other(const mx::array& rows, int first) {
  return mx::slice(rows, {first}, {rows.shape(0)}, {2});
}

// −log σ(x), stably.
mx::array negative_log_sigmoid(const mx::array& x) {
  return mx::logaddexp(mx::array(0.0f), mx::negative(x));
}

}  // namespace

TrainingMode parse_training_mode(const std::string& name) {
  if (name == "sft") return TrainingMode::sft;
  if (name == "dpo") return TrainingMode::dpo;
  if (name == "orpo") return TrainingMode::orpo;
  throw Error("training mode " + name + " is not offered (sft, dpo, orpo)");
}

std::string training_mode_name(TrainingMode mode) {
  switch (mode) {
    case TrainingMode::sft:
      return "sft";
    case TrainingMode::dpo:
      return "dpo";
    case TrainingMode::orpo:
      return "orpo";
  }
  return "sft";
}

AnswerLogProbs answer_log_probs(const mx::array& logits, const mx::array& targets,
                                const mx::array& mask) {
  auto wide = mx::astype(logits, mx::float32);
  auto log_probs = mx::subtract(wide, mx::logsumexp(wide, -1, /*keepdims=*/true));
  auto picked = mx::squeeze(mx::take_along_axis(log_probs, mx::expand_dims(targets, -1), -1), -1);
  auto scored = mx::where(mask, picked, mx::array(0.0f));
  return {mx::sum(scored, 1), mx::sum(mx::astype(mask, mx::float32), 1)};
}

mx::array preference_loss(TrainingMode mode, float beta, const AnswerLogProbs& policy,
                          const std::optional<AnswerLogProbs>& reference) {
  const auto chosen = every_other(policy.sums, 0), rejected = every_other(policy.sums, 1);
  if (mode == TrainingMode::dpo) {
    if (!reference) throw Error("dpo needs the reference model's log-probabilities");
    auto reference_chosen = mx::stop_gradient(every_other(reference->sums, 0));
    auto reference_rejected = mx::stop_gradient(every_other(reference->sums, 1));
    auto margin = mx::subtract(mx::subtract(chosen, reference_chosen),
                               mx::subtract(rejected, reference_rejected));
    return mx::mean(negative_log_sigmoid(mx::multiply(mx::array(beta), margin)));
  }
  if (mode != TrainingMode::orpo) throw Error("preference_loss: not a preference mode");
  const auto chosen_count = every_other(policy.counts, 0);
  const auto rejected_count = every_other(policy.counts, 1);
  auto mean_chosen = mx::divide(chosen, chosen_count);
  auto mean_rejected = mx::divide(rejected, rejected_count);
  auto log_odds = mx::subtract(mx::subtract(mean_chosen, mean_rejected),
                               mx::subtract(mx::log1p(mx::negative(mx::exp(mean_chosen))),
                                            mx::log1p(mx::negative(mx::exp(mean_rejected)))));
  auto nll = mx::divide(mx::negative(mx::sum(chosen)), mx::sum(chosen_count));
  return mx::add(nll, mx::multiply(mx::array(beta), mx::mean(negative_log_sigmoid(log_odds))));
}

}  // namespace mlx_cpp
