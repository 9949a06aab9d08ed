#include "engine/prefix_cache.h"

#include <iterator>

namespace mlx_cpp {

void PrefixCache::consider(const std::vector<TokenTrie::Id>& ids, std::size_t length,
                           bool trimmable, EntryList::iterator& best,
                           std::size_t& best_length) const {
  for (TokenTrie::Id id : ids) {
    const auto entry = by_id_.at(id);
    if (entry->trimmable != trimmable) continue;
    const bool longer = length > best_length;
    const bool as_long_and_newer =
        length == best_length && best != entries_.end() && entry->last_used > best->last_used;
    if (longer || as_long_and_newer) {
      best = entry;
      best_length = length;
    }
  }
}

std::optional<PrefixCache::Hit> PrefixCache::lookup(const std::vector<int>& prompt,
                                                    const std::string& signature) {
  if (prompt.size() < 2) return std::nullopt;
  const auto trie = tries_.find(signature);
  if (trie == tries_.end()) return std::nullopt;
  // The prompt's last token is always computed again: it yields the first
  // logits.
  const auto levels = trie->second.walk(prompt, prompt.size() - 1);
  auto best = entries_.end();
  std::size_t best_length = 0;
  // Trimmable caches serve any common prefix: those through the deepest
  // level that has one. Others serve only themselves: those ending on the
  // prompt's path.
  for (auto level = levels.rbegin(); level != levels.rend() && best == entries_.end(); ++level)
    consider(level->passing, level->depth, true, best, best_length);
  for (const auto& level : levels)
    if (!level.ending.empty()) consider(level.ending, level.depth, false, best, best_length);
  if (best == entries_.end()) return std::nullopt;
  best->last_used = ++clock_;
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Hit hit{static_cast<int>(best_length), clone_cache_list(best->caches)};
  const int drop = static_cast<int>(best->tokens.size() - best_length);
  if (drop > 0)
    for (auto& cache : hit.caches) cache->trim(drop);
  return hit;
}

void PrefixCache::insert(std::vector<int> tokens, CacheList caches, const std::string& signature) {
  if (tokens.empty() || caches.empty() || byte_cap_ == 0) return;
  Entry entry;
  entry.signature = signature;
  auto& trie = tries_[entry.signature];
  if (const auto* same = trie.exact(tokens); same && !same->empty())
    erase(by_id_.at(same->front()));
  entry.id = next_id_++;
  entry.tokens = std::move(tokens);
  entry.trimmable = all_trimmable(caches);
  entry.bytes = cache_list_bytes(caches);
  entry.caches = std::move(caches);
  entry.last_used = ++clock_;
  bytes_ += entry.bytes;
  tries_[entry.signature].insert(entry.id, entry.tokens);
  entries_.push_front(std::move(entry));
  by_id_[entries_.front().id] = entries_.begin();
  evict_to(byte_cap_);
}

void PrefixCache::clear() {
  evict_to(0);
}

void PrefixCache::erase(EntryList::iterator entry) {
  auto trie = tries_.find(entry->signature);
  trie->second.erase(entry->id, entry->tokens);
  if (trie->second.empty()) tries_.erase(trie);
  by_id_.erase(entry->id);
  bytes_ -= entry->bytes;
  entries_.erase(entry);
}

void PrefixCache::evict_to(std::size_t cap) {
  while (!entries_.empty() &&
         (bytes_ > cap || (max_entries_ > 0 && entries_.size() > max_entries_)))
    erase(std::prev(entries_.end()));
}

}  // namespace mlx_cpp
