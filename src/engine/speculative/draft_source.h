#pragma once
// A source of draft tokens for one sequence. Speculative decoding asks it
// for up to k tokens to follow the sequence so far, verifies them all in
// one forward of the target model and keeps the longest accepted run; the
// next proposal's context tells the source what was kept (a source with
// state, like a draft model's caches, rolls itself back to it).
#include <functional>
#include <vector>

namespace mlx_cpp {

struct Draft {
  std::vector<int> tokens;
  // Per token, what the source knows of its chance: a draft model's own
  // probability of the token; prompt lookup's n-gram length of the match
  // (engine/speculative/draft_schedule.h maps both to acceptance).
  std::vector<float> confidence;
  // Seconds until the first token was drafted (a draft model catching up
  // with the step's own tokens, then its pick) and for the tokens after it
  // (a forward each); negative: not measured (the first included a prefill
  // of context the source had not seen, such as a prompt).
  double first_seconds = 0, later_seconds = 0;
};

// Asked by sources that draft token by token, after each token, whether
// to draft another (the confidences so far).
using DraftMore = std::function<bool(const std::vector<float>& confidence)>;

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Up to `limit` tokens to follow `context`: every token of the sequence
  // so far (prompt and output), the last one not yet seen by the target.
  // Fewer (or none) when the source has nothing worth proposing or `more`
  // says stop.
  virtual Draft propose(const std::vector<int>& context, int limit, const DraftMore& more) = 0;
};

}  // namespace mlx_cpp
