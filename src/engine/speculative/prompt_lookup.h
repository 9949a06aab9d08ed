#pragma once
// Prompt lookup (n-gram) drafting: the tokens that followed an earlier
// occurrence of the context's last n tokens, for the longest n up to a
// limit that occurs. No model behind it: it pays where the output repeats
// its context (code edits, quoted text, rewrites). Of several occurrences
// it takes the one the previous proposal was copied from when the context
// still follows it (a copy of a block goes on from where it was, not from
// the latest line that looks alike), else the most recent.
#include <optional>

#include "engine/speculative/draft_source.h"

namespace mlx_cpp {

class PromptLookup : public DraftSource {
 public:
  explicit PromptLookup(int max_ngram) : max_ngram_(max_ngram) {}
  // Confidence: the match's n-gram length; a copy that goes on from the
  // previous one counts as one n-gram longer than the longest matched.
  Draft propose(const std::vector<int>& context, int limit, const DraftMore& more = {}) override;

 private:
  int max_ngram_;
  // Where the latest proposal was copied from, and how long the context
  // was then.
  std::optional<std::size_t> copied_from_;
  std::size_t context_then_ = 0;
};

}  // namespace mlx_cpp
