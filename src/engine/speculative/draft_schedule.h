#pragma once
// Confidence-scheduled drafting: how many drafts a verify should check,
// from what they are likely to earn and what they cost on this machine.
//
// Each drafted token has a confidence (a draft model's probability of it;
// prompt lookup's n-gram length) that falls in a bucket; a bucket's
// calibrated acceptance is the share of its tokens the target accepted
// when it reached them (a Beta(2, 1) prior: untried buckets are tried),
// learned online and kept in a
// file. With a_i the acceptance of draft i, P_i = a_1 ... a_i, verifying
// the first k drafts yields E_k = 1 + P_1 + ... + P_k tokens (the target
// always adds one) for cost_k = draft time + verify_seconds(k + 1), where
// verifying one token is a plain decode step. The schedule takes the k
// with the most tokens per second, k = 0 (plain decoding) when no draft
// pays, so speculation switches itself off where it loses. Costs are
// measured on every verify and plain step (an average per length; lengths
// not measured yet are estimated from those that were, and where
// verifying pays, one longer than any measured is tried).
// While it decodes plainly a
// draft model still drafts one step after kExploreEvery, then after twice
// as many (up to kMaxExploreEvery), to notice when drafts pay again.
#include <filesystem>
#include <optional>
#include <vector>

#include "engine/speculative/speculative_options.h"

namespace mlx_cpp {

class DraftSchedule {
 public:
  // `file`: the calibration to start from and keep (none: start fresh,
  // keep nothing). `kind` decides how confidences fall into buckets.
  DraftSchedule(DraftKind kind, std::optional<std::filesystem::path> file);
  ~DraftSchedule();  // saves the calibration
  DraftSchedule(const DraftSchedule&) = delete;
  DraftSchedule& operator=(const DraftSchedule&) = delete;

  // Whether this step should draft at all, at most `limit` tokens (else
  // it decodes plainly).
  bool worth_drafting(int limit);
  // Whether a source drafting token by token should draft one more.
  bool worth_another(const std::vector<float>& confidence, int limit) const;
  // How many of the drafts to verify (0 .. confidence.size()): the most
  // tokens per second, or one draft more where that verify is longer than
  // any timed yet.
  int choose(const std::vector<float>& confidence) const;

  // A verify of `length` tokens (1: a plain step) took `seconds`; of the
  // `drafted` tokens the first took `first_seconds` to draft and the others
  // `later_seconds` together (negative: not measured, each of the three).
  void record_cost(int length, double seconds, int drafted, double first_seconds,
                   double later_seconds);
  // Of the verified drafts (their confidences), the first `accepted`
  // were accepted.
  void record_outcome(const std::vector<float>& confidence, int accepted);

  double acceptance(float confidence, int position) const;
  double verify_seconds(int length) const;
  // Seconds of drafting n tokens in one step.
  double draft_seconds(int n) const;
  const std::optional<std::filesystem::path>& file() const { return file_; }
  void save() const;

  static constexpr int kMaxLength = 33;  // verify lengths tracked (drafts + 1)
  static constexpr int kExploreEvery = 32;
  static constexpr int kMaxExploreEvery = 1024;

 private:
  int bucket(float confidence, int position) const;
  // Whether no verify of `length` tokens or longer has been timed (false
  // past the lengths tracked).
  bool untimed_from(int length) const;
  // The calibrated acceptance of each of a step's drafts.
  std::vector<double> acceptances_of(const std::vector<float>& confidence) const;
  // Tokens per second of verifying the first k drafts (k = 0 ..
  // acceptances.size()), `paid` drafts having been made already.
  std::vector<double> rates(const std::vector<double>& acceptances, int paid) const;

  DraftKind kind_;
  std::optional<std::filesystem::path> file_;
  struct Bucket {
    double accepted = 0, tried = 0;
  };
  std::vector<Bucket> buckets_;
  struct Cost {
    double seconds = 0;  // exponentially weighted
    double count = -1;   // samples taken (-1: none seen, the first is skipped)
  };
  std::vector<Cost> verify_;  // by length
  // A draft model's first draft of a step costs a forward of the tokens
  // it catches up with (one or two), each later one a one-token forward.
  Cost first_draft_, later_draft_;
  int plain_steps_in_a_row_ = 0;
  int explore_every_ = kExploreEvery;
};

// Where a schedule keeps its calibration: beside the model cache, one file
// per model and source (and draft model).
std::filesystem::path draft_schedule_file(const std::filesystem::path& model_directory,
                                          DraftKind kind,
                                          const std::filesystem::path& draft_directory = {});

}  // namespace mlx_cpp
