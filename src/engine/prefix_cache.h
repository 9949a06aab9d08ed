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
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/prefix_index.h"
#include "model/kv_cache.h"

namespace mlx_cpp {

// A slower store under the prefix cache (the SSD tier, engine/ssd_cache.h):
// entries that leave memory go down to it, and a lookup asks it for a
// longer prefix than memory holds.
class PrefixCacheTier {
 public:
  virtual ~PrefixCacheTier() = default;
  struct Found {
    std::vector<int> tokens;  // the stored sequence, whole
    CacheList caches;
    std::size_t length = 0;  // prompt tokens it serves
  };
  // Keeps a copy of the entry (called on the thread that owns the caches).
  virtual void spill(const std::vector<int>& tokens, const CacheList& caches,
                     const std::string& signature) = 0;
  // An entry that serves more than `longer_than` tokens of `prompt`
  // (PrefixIndex::best's rules), loaded and checked; nullopt when none.
  virtual std::optional<Found> fetch(const std::vector<int>& prompt, const std::string& signature,
                                     std::size_t longer_than) = 0;
  // Returns once everything spilled so far is stored.
  virtual void flush() = 0;
};

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
  // past its size) only a prefix that is a whole entry. With a tier, a
  // longer prefix there is loaded and serves the hit (and is kept in
  // memory too when it fits).
  std::optional<Hit> lookup(const std::vector<int>& prompt, const std::string& signature);
  // Stores `caches` (taken) as holding `tokens` under `signature` (what a
  // lookup must name to find them); replaces an entry with the same tokens
  // and signature, then evicts down to the cap (evicted entries go down to
  // the tier).
  void insert(std::vector<int> tokens, CacheList caches, const std::string& signature);
  // Drops every entry held in memory (the tier keeps its own).
  void clear();
  // Evicts least recently used entries until at most `bytes` are held.
  void shrink_to(std::size_t bytes) { evict_to(bytes); }
  // Hands entries that leave memory to `tier` (not owned; null: none).
  void set_tier(PrefixCacheTier* tier) { tier_ = tier; }
  // Copies every entry the tier lacks down to it and waits until stored.
  void flush();

  std::size_t bytes() const { return bytes_; }
  std::size_t entries() const { return entries_.size(); }
  std::size_t byte_cap() const { return byte_cap_; }

 private:
  struct Entry {
    PrefixIndex::Id id = 0;
    std::vector<int> tokens;
    CacheList caches;
    std::string signature;
    std::size_t bytes = 0;
    bool on_disk = false;  // the tier holds it already
  };
  using EntryList = std::list<Entry>;
  void insert(std::vector<int> tokens, CacheList caches, const std::string& signature,
              bool on_disk);
  void evict_to(std::size_t cap);
  void erase(EntryList::iterator entry);

  std::size_t byte_cap_;
  std::size_t max_entries_;
  std::size_t bytes_ = 0;
  EntryList entries_;  // most recently used first
  std::unordered_map<PrefixIndex::Id, EntryList::iterator> by_id_;
  PrefixIndex index_;
  PrefixIndex::Id next_id_ = 1;
  PrefixCacheTier* tier_ = nullptr;
};

}  // namespace mlx_cpp
