#include "engine/prefix_index.h"

namespace mlx_cpp {

void PrefixIndex::insert(Id id, const std::vector<int>& tokens, const std::string& signature,
                         bool trimmable) {
  entries_[id] = Entry{tokens, signature, trimmable, ++clock_};
  tries_[signature].insert(id, tokens);
}

void PrefixIndex::erase(Id id) {
  auto entry = entries_.find(id);
  if (entry == entries_.end()) return;
  auto trie = tries_.find(entry->second.signature);
  trie->second.erase(id, entry->second.tokens);
  if (trie->second.empty()) tries_.erase(trie);
  entries_.erase(entry);
}

void PrefixIndex::touch(Id id) {
  if (auto entry = entries_.find(id); entry != entries_.end()) entry->second.last_used = ++clock_;
}

void PrefixIndex::consider(const std::vector<Id>& ids, std::size_t length, bool trimmable,
                           std::optional<Match>& best) const {
  for (Id id : ids) {
    const auto& entry = entries_.at(id);
    if (entry.trimmable != trimmable) continue;
    const bool longer = best ? length > best->length : length > 0;
    const bool as_long_and_newer =
        best && length == best->length && entry.last_used > entries_.at(best->id).last_used;
    if (longer || as_long_and_newer) best = Match{id, length};
  }
}

std::optional<PrefixIndex::Match> PrefixIndex::best(const std::vector<int>& prompt,
                                                    const std::string& signature) const {
  if (prompt.size() < 2) return std::nullopt;
  const auto trie = tries_.find(signature);
  if (trie == tries_.end()) return std::nullopt;
  const auto levels = trie->second.walk(prompt, prompt.size() - 1);
  std::optional<Match> best;
  // Trimmable caches serve any common prefix: those through the deepest
  // level that has one. Others serve only themselves: those ending on the
  // prompt's path.
  for (auto level = levels.rbegin(); level != levels.rend() && !best; ++level)
    consider(level->passing, level->depth, true, best);
  for (const auto& level : levels)
    if (!level.ending.empty()) consider(level.ending, level.depth, false, best);
  return best;
}

std::optional<PrefixIndex::Id> PrefixIndex::exact(const std::vector<int>& tokens,
                                                  const std::string& signature) const {
  const auto trie = tries_.find(signature);
  if (trie == tries_.end()) return std::nullopt;
  const auto* ids = trie->second.exact(tokens);
  if (!ids || ids->empty()) return std::nullopt;
  return ids->front();
}

}  // namespace mlx_cpp
