#include "engine/prefix_cache.h"

#include <iterator>

namespace mlx_cpp {

std::optional<PrefixCache::Hit> PrefixCache::lookup(const std::vector<int>& prompt,
                                                    const std::string& signature) {
  auto match = index_.best(prompt, signature);
  if (tier_) {
    // A file on disk that serves more of the prompt serves the hit, and
    // becomes an entry here as well (evicted at once if it does not fit).
    if (auto found = tier_->fetch(prompt, signature, match ? match->length : 0)) {
      insert(found->tokens, clone_cache_list(found->caches), signature, /*on_disk=*/true);
      Hit hit{static_cast<int>(found->length), std::move(found->caches)};
      const int drop = static_cast<int>(found->tokens.size() - found->length);
      if (drop > 0)
        for (auto& cache : hit.caches) cache->trim(drop);
      return hit;
    }
  }
  if (!match) return std::nullopt;
  auto entry = by_id_.at(match->id);
  index_.touch(entry->id);
  entries_.splice(entries_.begin(), entries_, entry);  // most recently used
  Hit hit{static_cast<int>(match->length), clone_cache_list(entry->caches)};
  const int drop = static_cast<int>(entry->tokens.size() - match->length);
  if (drop > 0)
    for (auto& cache : hit.caches) cache->trim(drop);
  return hit;
}

void PrefixCache::insert(std::vector<int> tokens, CacheList caches, const std::string& signature) {
  insert(std::move(tokens), std::move(caches), signature, /*on_disk=*/false);
}

void PrefixCache::insert(std::vector<int> tokens, CacheList caches, const std::string& signature,
                         bool on_disk) {
  if (tokens.empty() || caches.empty() || byte_cap_ == 0) return;
  if (const auto same = index_.exact(tokens, signature)) erase(by_id_.at(*same));
  Entry entry;
  entry.id = next_id_++;
  entry.signature = signature;
  entry.tokens = std::move(tokens);
  entry.bytes = cache_list_bytes(caches);
  entry.caches = std::move(caches);
  entry.on_disk = on_disk;
  bytes_ += entry.bytes;
  index_.insert(entry.id, entry.tokens, entry.signature, all_trimmable(entry.caches));
  entries_.push_front(std::move(entry));
  by_id_[entries_.front().id] = entries_.begin();
  evict_to(byte_cap_);
}

void PrefixCache::clear() {
  while (!entries_.empty()) erase(std::prev(entries_.end()));
}

void PrefixCache::flush() {
  if (!tier_) return;
  for (auto& entry : entries_) {
    if (entry.on_disk) continue;
    tier_->spill(entry.tokens, entry.caches, entry.signature);
    entry.on_disk = true;
  }
  tier_->flush();
}

void PrefixCache::erase(EntryList::iterator entry) {
  index_.erase(entry->id);
  by_id_.erase(entry->id);
  bytes_ -= entry->bytes;
  entries_.erase(entry);
}

void PrefixCache::evict_to(std::size_t cap) {
  while (!entries_.empty() &&
         (bytes_ > cap || (max_entries_ > 0 && entries_.size() > max_entries_))) {
    auto last = std::prev(entries_.end());
    // What leaves memory goes down a tier, if there is one.
    if (tier_ && !last->on_disk) tier_->spill(last->tokens, last->caches, last->signature);
    erase(last);
  }
}

}  // namespace mlx_cpp
