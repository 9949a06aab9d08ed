#pragma once
// Prompt lookup (n-gram) drafting: the tokens that followed the most
// recent earlier occurrence of the context's last n tokens, for the
// longest n up to a limit that occurs. No model behind it: it pays where
// the output repeats its context (code edits, quoted text, rewrites).
#include "engine/speculative/draft_source.h"

namespace mlx_cpp {

class PromptLookup : public DraftSource {
 public:
  explicit PromptLookup(int max_ngram) : max_ngram_(max_ngram) {}
  std::vector<int> propose(const std::vector<int>& context, int limit) override;
  std::string name() const override { return "prompt-lookup"; }

 private:
  int max_ngram_;
};

}  // namespace mlx_cpp
