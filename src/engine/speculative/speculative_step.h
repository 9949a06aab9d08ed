#pragma once
// One speculative step of a sequence: its draft source proposes up to k
// tokens, one forward of the target verifies them after the sequence's
// current token, and the longest accepted run plus one token of the
// target's own is delivered; the target's caches are rolled back past the
// first rejection. Lossless by construction:
// - greedy: a draft is accepted when it is the target's argmax, so the
//   tokens are plain decoding's. On the fast path the verify computes
//   every position as its own decode step would
//   (ForwardBatch::consecutive_positions), so the logprobs are plain
//   decoding's bit for bit too. The stock path verifies with one forward
//   of the k + 1 tokens, as mlx-lm's speculative_generate_step does, and
//   is bit-exact with it.
// - sampling: each proposal is a point mass (the sources are
//   deterministic), so draft d at a position is accepted with probability
//   p(d) under the target's distribution there (the sampler's filters and
//   temperature applied), and a rejection draws from p without d,
//   renormalized: every token's probability is exactly p's.
// Caches that could not be trimmed after the verify (a sliding window
// about to wrap) are snapshotted before it; a rejection restores the
// snapshot and feeds the accepted tokens again.
#include <optional>
#include <vector>

#include "engine/model_runtime.h"
#include "engine/sequence.h"
#include "engine/speculative/draft_schedule.h"
#include "engine/speculative/draft_source.h"

namespace mlx_cpp {

struct SpeculativeStepOutcome {
  bool goes_on = false;     // false: the sequence has finished
  int verified_drafts = 0;  // 0: the step was a plain decode step
};

// A step in three stages, so that a scheduler can verify several
// sequences' drafts in one forward: draft_step proposes and chooses the
// drafts (and snapshots caches that could not be trimmed after them),
// verify_forward builds the target's forward of the input and drafts, and
// finish_step judges them from that forward's logits [fed, vocab], rolls
// the caches back past the first rejection and delivers the tokens.
struct DraftedStep {
  Sequence* sequence = nullptr;
  DraftSchedule* schedule = nullptr;
  std::vector<int> context;  // the history and the input
  Draft draft;               // the drafts chosen for the verify
  int drafted = 0;           // drafts the source made (the chosen and the rest)
  std::vector<int> fed;      // the input, then the drafts
  std::optional<CacheList> snapshot;
  // Verified position by position (ForwardBatch::consecutive_positions).
  bool stepwise = false;
};

DraftedStep draft_step(const ModelRuntime& runtime, Sequence& sequence, DraftSchedule* schedule,
                       bool drafting_granted);
mlx::core::array verify_forward(const ModelRuntime& runtime, DraftedStep& step);
// Several stepwise verifies (step.stepwise) in one forward, each
// sequence's rows in its own caches: per step, the logits verify_forward
// gives it alone, bit for bit where the kernels are batch-invariant (the
// fast path on the CPU), while each weight is read once for all rows.
std::vector<mlx::core::array> verify_forward_together(const ModelRuntime& runtime,
                                                      const std::vector<DraftedStep*>& steps);
// `forward_seconds`: the forward's share of time (the schedule adds the
// judging and learns the verify's cost from their sum).
SpeculativeStepOutcome finish_step(const ModelRuntime& runtime, DraftedStep& step,
                                   const mlx::core::array& logits, double forward_seconds);

// All three stages for one sequence. The sequence has a draft source and
// its prompt prefilled (all but the last token). `schedule` (confidence scheduling; null: a fixed
// number of drafts) decides how many drafts to verify and learns from the outcome.
// `drafting_granted`: the schedule was asked already whether a costly
// source's drafts pay this step (and said yes).
SpeculativeStepOutcome speculative_step(const ModelRuntime& runtime, Sequence& sequence,
                                        DraftSchedule* schedule, bool drafting_granted = false);

}  // namespace mlx_cpp
