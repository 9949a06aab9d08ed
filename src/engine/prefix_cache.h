#pragma once
// Caches of finished prompts, shared by every request: a new sequence
// starts from the longest cached prefix of its prompt instead of
// prefilling it again. Entries are clones (copy on write: a sequence that
// starts from an entry never changes it), capped in bytes, evicted least
// recently used first, and keyed by the caches' signature (their kind and
// parameters), so an entry is only handed to a sequence whose caches
// would hold the same keys and values. A token trie per signature finds
// the longest cached prefix in time proportional to the prompt's length.
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/token_trie.h"
#include "model/kv_cache.h"

namespace mlx_cpp {

class PrefixCache {
 public:
  // max_entries 0: as many as fit in byte_cap.
  explicit PrefixCache(std::size_t byte_cap, std::size_t max_entries = 0)
      : byte_cap_(byte_cap), max_entries_(max_entries) {}

  struct Hit {
    int tokens = 0;    // prompt tokens the caches hold
    CacheList caches;  // clones, trimmed to `tokens`
  };
  // The longest usable cached prefix of `prompt`, shorter than the prompt
  // (its last token is always computed again: it yields the first logits).
  // Trimmable caches serve any common prefix; others (a sliding window
  // past its size) only a prefix that is a whole entry.
  std::optional<Hit> lookup(const std::vector<int>& prompt, const std::string& signature);
  // Stores `caches` (taken) as holding `tokens` under `signature` (what a
  // lookup must name to find them); replaces an entry with the same tokens
  // and signature, then evicts down to the cap.
  void insert(std::vector<int> tokens, CacheList caches, const std::string& signature);
  void clear();
  // Evicts least recently used entries until at most `bytes` are held.
  void shrink_to(std::size_t bytes) { evict_to(bytes); }

  std::size_t bytes() const { return bytes_; }
  std::size_t entries() const { return entries_.size(); }
  std::size_t byte_cap() const { return byte_cap_; }

 private:
  struct Entry {
    TokenTrie::Id id = 0;
    std::vector<int> tokens;
    CacheList caches;
    std::string signature;
    bool trimmable = false;
    std::size_t bytes = 0;
    std::uint64_t last_used = 0;  // larger: more recent
  };
  using EntryList = std::list<Entry>;
  void evict_to(std::size_t cap);
  void erase(EntryList::iterator entry);
  // Makes the most recently used of the `ids` whose caches are (or are
  // not) `trimmable` the best match if `length` beats it.
  void consider(const std::vector<TokenTrie::Id>& ids, std::size_t length, bool trimmable,
                EntryList::iterator& best, std::size_t& best_length) const;

  std::size_t byte_cap_;
  std::size_t max_entries_;
  std::size_t bytes_ = 0;
  EntryList entries_;  // most recently used first
  std::unordered_map<TokenTrie::Id, EntryList::iterator> by_id_;
  std::map<std::string, TokenTrie> tries_;  // by cache signature
  TokenTrie::Id next_id_ = 1;
  std::uint64_t clock_ = 0;
};

}  // namespace mlx_cpp
