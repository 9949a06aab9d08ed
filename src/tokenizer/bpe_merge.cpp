// The per-piece half of BpeModel: initial symbols and the merge loop.
#include <queue>

#include "tokenizer/bpe_model.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {

// One symbol per character: its vocab id, else its <0xNN> byte tokens
// (byte_fallback), else the unknown token (fused over runs when fuse_unk),
// else nothing, exactly as tokenizers' BPE::merge_word does.
std::vector<TokenId> BpeModel::initial_symbols(std::string_view piece) const {
  std::vector<TokenId> symbols;
  symbols.reserve(piece.size());
  bool previous_was_unk = false;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t length = utf8::char_length(piece, pos);
    std::string character(piece.substr(pos, length));
    if (pos > 0) character.insert(0, continuing_subword_prefix_);
    if (pos + length == piece.size()) character += end_of_word_suffix_;
    pos += length;
    if (const auto id = token_to_id(character)) {
      symbols.push_back(*id);
      previous_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      std::vector<TokenId> bytes;
      for (char byte : character) {
        if (const auto& id = byte_tokens_[static_cast<unsigned char>(byte)]) bytes.push_back(*id);
      }
      if (bytes.size() == character.size()) {
        symbols.insert(symbols.end(), bytes.begin(), bytes.end());
        previous_was_unk = false;
        continue;
      }
    }
    if (unk_id_) {
      if (!(fuse_unk_ && previous_was_unk)) symbols.push_back(*unk_id_);
      previous_was_unk = true;
    }
  }
  return symbols;
}

// Repeatedly merges the adjacent pair of lowest rank (leftmost on ties).
// Symbols form a linked list; queue entries that went stale are skipped.
// Cost: O(n log n) in the number of symbols.
std::vector<TokenId> BpeModel::merge_symbols(std::vector<TokenId> symbols) const {
  const int count = static_cast<int>(symbols.size());
  if (count < 2) return symbols;
  struct Candidate {
    uint32_t rank;
    int position;
    TokenId merged;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::vector<int> previous(count), next(count);
  std::vector<bool> alive(count, true);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (int i = 0; i < count; ++i) {
    previous[i] = i - 1;
    next[i] = i + 1 < count ? i + 1 : -1;
    if (i + 1 < count) {
      if (const auto merge = find_merge(symbols[i], symbols[i + 1])) {
        queue.push({merge->rank, i, merge->merged});
      }
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const int left = top.position;
    if (!alive[left] || next[left] == -1) continue;
    const int right = next[left];
    const auto current = find_merge(symbols[left], symbols[right]);
    if (!current || current->merged != top.merged) continue;
    symbols[left] = top.merged;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] != -1) previous[next[right]] = left;
    if (previous[left] != -1) {
      if (const auto merge = find_merge(symbols[previous[left]], symbols[left])) {
        queue.push({merge->rank, previous[left], merge->merged});
      }
    }
    if (next[left] != -1) {
      if (const auto merge = find_merge(symbols[left], symbols[next[left]])) {
        queue.push({merge->rank, left, merge->merged});
      }
    }
  }
  std::vector<TokenId> merged;
  for (int i = 0; i != -1; i = next[i]) merged.push_back(symbols[i]);
  return merged;
}

}  // namespace mlx_cpp
