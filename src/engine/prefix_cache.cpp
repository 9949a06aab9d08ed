#include "engine/prefix_cache.h"

#include <algorithm>

namespace mlx_cpp {

std::optional<PrefixCache::Hit> PrefixCache::lookup(const std::vector<int>& prompt,
                                                    const std::string& signature) {
  // A linear scan: entries number in the tens to hundreds, and comparing
  // token ids costs far less than prefilling a single token.
  if (prompt.size() < 2) return std::nullopt;
  auto best = entries_.end();
  std::size_t best_length = 0;
  for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
    if (entry->signature != signature) continue;
    const auto& tokens = entry->tokens;
    std::size_t common = 0;
    const std::size_t limit = std::min(tokens.size(), prompt.size() - 1);
    while (common < limit && tokens[common] == prompt[common]) ++common;
    if (!entry->trimmable && common != tokens.size()) continue;
    if (common > best_length) {
      best = entry;
      best_length = common;
    }
  }
  if (best == entries_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Hit hit{static_cast<int>(best_length), clone_cache_list(best->caches)};
  const int drop = static_cast<int>(best->tokens.size() - best_length);
  if (drop > 0)
    for (auto& cache : hit.caches) cache->trim(drop);
  return hit;
}

void PrefixCache::insert(std::vector<int> tokens, CacheList caches) {
  if (tokens.empty() || caches.empty() || byte_cap_ == 0) return;
  for (auto entry = entries_.begin(); entry != entries_.end(); ++entry) {
    if (entry->tokens == tokens) {
      bytes_ -= entry->bytes;
      entries_.erase(entry);
      break;
    }
  }
  Entry entry;
  entry.tokens = std::move(tokens);
  entry.trimmable = all_trimmable(caches);
  entry.signature = cache_list_signature(caches);
  entry.bytes = cache_list_bytes(caches);
  entry.caches = std::move(caches);
  bytes_ += entry.bytes;
  entries_.push_front(std::move(entry));
  evict_to(byte_cap_);
}

void PrefixCache::clear() {
  evict_to(0);
}

void PrefixCache::evict_to(std::size_t cap) {
  while (!entries_.empty() &&
         (bytes_ > cap || (max_entries_ > 0 && entries_.size() > max_entries_))) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

}  // namespace mlx_cpp
