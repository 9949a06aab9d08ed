#include "engine/speculative/prompt_lookup.h"

#include <algorithm>

namespace mlx_cpp {

std::vector<int> PromptLookup::propose(const std::vector<int>& context, int limit) {
  const int size = static_cast<int>(context.size());
  for (int n = std::min(max_ngram_, size - 1); n >= 1; --n) {
    const auto suffix = context.end() - n;
    // The most recent earlier occurrence: it starts before the suffix and
    // leaves at least one token after it.
    for (int start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix, context.end(), context.begin() + start)) continue;
      const int from = start + n;
      const int count = std::min(limit, size - from);
      return {context.begin() + from, context.begin() + from + count};
    }
  }
  return {};
}

}  // namespace mlx_cpp
