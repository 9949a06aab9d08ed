#pragma once
// Which stored token sequence serves a prompt best: sequences filed under
// a signature (the caches' kind and scheme), found by a token trie in time
// proportional to the prompt's length. The prefix cache keeps one for the
// entries it holds in memory and the SSD tier one for the files it holds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/token_trie.h"

namespace mlx_cpp {

class PrefixIndex {
 public:
  using Id = TokenTrie::Id;

  struct Match {
    Id id = 0;
    std::size_t length = 0;  // prompt tokens the stored sequence serves
  };

  // trimmable: the caches behind `id` can drop their last tokens, so they
  // serve any common prefix; others serve only a prompt they are a whole
  // prefix of. Ids are the caller's, unique.
  void insert(Id id, const std::vector<int>& tokens, const std::string& signature, bool trimmable);
  void erase(Id id);
  // Marks `id` most recently used: it wins ties of length.
  void touch(Id id);
  // The stored sequence that serves the longest prefix of `prompt` but its
  // last token (always computed again: it yields the first logits); ties
  // go to the most recently used.
  std::optional<Match> best(const std::vector<int>& prompt, const std::string& signature) const;
  // A sequence stored with exactly these tokens under `signature`.
  std::optional<Id> exact(const std::vector<int>& tokens, const std::string& signature) const;
  bool contains(Id id) const { return entries_.count(id) > 0; }
  const std::vector<int>& tokens(Id id) const { return entries_.at(id).tokens; }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<int> tokens;
    std::string signature;
    bool trimmable = false;
    std::uint64_t last_used = 0;
  };
  void consider(const std::vector<Id>& ids, std::size_t length, bool trimmable,
                std::optional<Match>& best) const;
  std::unordered_map<Id, Entry> entries_;
  std::map<std::string, TokenTrie> tries_;  // by signature
  std::uint64_t clock_ = 0;
};

}  // namespace mlx_cpp
