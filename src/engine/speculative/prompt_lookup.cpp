#include "engine/speculative/prompt_lookup.h"

#include <algorithm>

namespace mlx_cpp {

Draft PromptLookup::propose(const std::vector<int>& context, int limit, const DraftMore&) {
  const int size = static_cast<int>(context.size());
  auto copy_from = [&](int from, int n) {
    copied_from_ = from;
    context_then_ = context.size();
    const int count = std::min(limit, size - from);
    Draft draft;
    draft.tokens.assign(context.begin() + from, context.begin() + from + count);
    draft.confidence.assign(count, static_cast<float>(n));
    return draft;
  };
  // The previous copy goes on: the tokens since then are its source's
  // next ones (as far as they reach).
  if (copied_from_ && context.size() > context_then_) {
    const std::size_t grown = context.size() - context_then_;
    const std::size_t from = *copied_from_ + grown;
    if (from < context_then_ &&
        std::equal(context.begin() + context_then_, context.end(), context.begin() + *copied_from_))
      return copy_from(static_cast<int>(from), max_ngram_ + 1);
  }
  for (int n = std::min(max_ngram_, size - 1); n >= 1; --n) {
    const auto suffix = context.end() - n;
    // The most recent earlier occurrence: it starts before the suffix and
    // leaves at least one token after it.
    for (int start = size - n - 1; start >= 0; --start)
      if (std::equal(suffix, context.end(), context.begin() + start))
        return copy_from(start + n, n);
  }
  copied_from_.reset();
  return {};
}

}  // namespace mlx_cpp
