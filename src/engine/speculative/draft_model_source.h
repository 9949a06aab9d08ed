#pragma once
// Drafting with a smaller model of the same vocabulary: greedy tokens from
// its own caches, which follow the sequence. Before each proposal the
// caches are trimmed back to the longest prefix they share with the
// context (what the target kept) and fed the rest, so after a rejection
// they hold exactly the accepted tokens, as mlx-lm's
// speculative_generate_step rewinds its draft cache. Caches that cannot
// be trimmed (a sliding window that wrapped) go back to a snapshot taken
// before the drafts instead, and are fed the accepted tokens again.
#include "engine/model_runtime.h"
#include "engine/speculative/draft_source.h"

namespace mlx_cpp {

class DraftModelSource : public DraftSource {
 public:
  // prefill_chunk: tokens per forward while the draft catches up with a
  // long context (the prompt).
  DraftModelSource(const ModelRuntime& draft, int prefill_chunk);
  // Confidence: the draft's probability of each token it proposes.
  Draft propose(const std::vector<int>& context, int limit, const DraftMore& more = {}) override;

 private:
  // Feeds context[fed_.size()..] (at least one token) and returns the
  // logits of the last; snapshots caches that could not be trimmed after
  // `drafts` more tokens.
  mlx::core::array catch_up(const std::vector<int>& context, int drafts);
  mlx::core::array feed(const std::vector<int>& tokens);

  const ModelRuntime& draft_;
  int prefill_chunk_;
  CacheList caches_;
  std::vector<int> fed_;       // the tokens the caches hold
  std::size_t caught_up_ = 0;  // tokens the latest catch_up fed
  // The caches before the latest drafts, and how many tokens they held.
  CacheList snapshot_;
  std::size_t snapshot_fed_ = 0;
};

// Throws Error naming the difference when `draft` cannot draft for
// `target`: another vocabulary size or other tokens.
void check_draft_compatible(const ModelRuntime& target, const ModelRuntime& draft);

}  // namespace mlx_cpp
