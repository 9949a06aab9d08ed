#pragma once
// Added tokens (tokenizer.json "added_tokens"): matched in the text before
// the model runs, leftmost-longest, honouring single_word / lstrip / rstrip.
// Tokens with normalized=false match the raw text; normalized ones match the
// normalized text, as tokenizers' AddedVocabulary does.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/piece.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

class Normalizer;

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A stretch of text: either an added token (id set) or text for the model.
struct TextSegment {
  std::optional<TokenId> token;
  Piece text;
};

class AddedVocabulary {
 public:
  AddedVocabulary(const nlohmann::json& added_tokens, const Normalizer* normalizer);

  // Cuts text into added tokens and normalized text segments.
  std::vector<TextSegment> extract_and_normalize(std::string_view text,
                                                 const Normalizer* normalizer) const;

  std::optional<TokenId> token_to_id(std::string_view content) const;
  // The string decode uses for id (the normalized form for normalized tokens).
  const std::string* decode_string(TokenId id) const;
  bool is_special(std::string_view token) const;
  const std::map<TokenId, AddedToken>& tokens() const { return by_id_; }

 private:
  // A trie over token strings for leftmost-longest matching.
  struct Matcher {
    struct Node {
      std::unordered_map<char, int> children;
      std::optional<TokenId> token;
    };
    std::vector<Node> nodes{Node{}};
    void insert(const std::string& pattern, TokenId id);
    // Longest pattern starting at text[pos]: (end, id).
    std::optional<std::pair<size_t, TokenId>> longest_at(std::string_view text, size_t pos) const;
  };

  void split(const Piece& piece, const Matcher& matcher, std::vector<TextSegment>& out) const;

  std::map<TokenId, AddedToken> by_id_;
  std::unordered_map<std::string, TokenId> by_content_;
  std::unordered_map<TokenId, std::string> normalized_content_;
  std::unordered_set<std::string> special_contents_;
  Matcher raw_matcher_;
  Matcher normalized_matcher_;
  bool has_raw_ = false;
  bool has_normalized_ = false;
};

}  // namespace mlx_cpp
