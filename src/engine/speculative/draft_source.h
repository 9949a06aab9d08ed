#pragma once
// A source of draft tokens for one sequence. Speculative decoding asks it
// for up to k tokens to follow the sequence so far, verifies them all in
// one forward of the target model and keeps the longest accepted run; the
// next proposal's context tells the source what was kept (a source with
// state, like a draft model's caches, rolls itself back to it).
#include <string>
#include <vector>

namespace mlx_cpp {

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Up to `limit` tokens to follow `context`: every token of the sequence
  // so far (prompt and output), the last one not yet seen by the target.
  // Fewer (or none) when the source has nothing worth proposing.
  virtual std::vector<int> propose(const std::vector<int>& context, int limit) = 0;
  // "draft" or "prompt-lookup" (telemetry).
  virtual std::string name() const = 0;
};

}  // namespace mlx_cpp
