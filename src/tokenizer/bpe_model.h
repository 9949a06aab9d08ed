#pragma once
// The BPE model of tokenizer.json: vocabulary, ranked merges, byte fallback
// (<0xNN> tokens), unknown-token handling and ignore_merges. Encodes one
// pre-tokenized piece at a time, lowest-rank merge first (leftmost on ties),
// with a per-piece cache.
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

class BpeModel {
 public:
  explicit BpeModel(const nlohmann::json& spec);

  // Appends the ids of one piece to out.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  const std::string* id_to_token(TokenId id) const;  // nullptr if unknown
  size_t vocab_size() const { return vocab_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    TokenId merged;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using Vocab = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

  void load_vocab(const nlohmann::json& vocab);
  void load_merges(const nlohmann::json& merges);
  std::vector<TokenId> initial_symbols(std::string_view piece) const;
  std::vector<TokenId> merge_symbols(std::vector<TokenId> symbols) const;
  std::optional<Merge> find_merge(TokenId left, TokenId right) const;

  Vocab vocab_;
  std::vector<const std::string*> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<TokenId> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  std::vector<std::optional<TokenId>> byte_tokens_;  // <0xNN> ids

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> cache_;
};

}  // namespace mlx_cpp
