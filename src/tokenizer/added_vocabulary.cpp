#include "tokenizer/added_vocabulary.h"

#include "io/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_text.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

AddedToken parse_added_token(const nlohmann::json& entry, size_t index) {
  if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() ||
      !entry.contains("content") || !entry["content"].is_string()) {
    throw Error("[tokenizer.json] added_tokens[" + std::to_string(index) +
                "] needs an integer 'id' and a string 'content'");
  }
  if (entry["id"].get<int64_t>() < 0 || entry["id"].get<int64_t>() > kMaxTokenId)
    throw Error("[tokenizer.json] added_tokens[" + std::to_string(index) + "] has invalid id " +
                entry["id"].dump() + " (ids run from 0 to " + std::to_string(kMaxTokenId) + ")");
  AddedToken token;
  token.id = entry["id"].get<TokenId>();
  token.content = entry["content"].get<std::string>();
  token.single_word = entry.value("single_word", false);
  token.lstrip = entry.value("lstrip", false);
  token.rstrip = entry.value("rstrip", false);
  token.special = entry.value("special", false);
  token.normalized = entry.value("normalized", !token.special);
  return token;
}

// Rust's Unicode \w (which tokenizers uses for single_word): Alphabetic,
// marks, decimal digits, connector punctuation and joiners. PCRE2's own \w
// differs (it takes all \p{N} and no marks).
const Regex& word_character() {
  static const Regex pattern(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])",
                             "added token single_word");
  return pattern;
}

// Tests on the one character next to a match (a whole character, so PCRE2
// always sees valid UTF-8).
bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  size_t begin = text.size() - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return word_character().search(text.substr(begin));
}

bool starts_with_word(std::string_view text) {
  return !text.empty() && word_character().search(text.substr(0, utf8::char_length(text, 0)));
}

}  // namespace

void AddedVocabulary::Matcher::insert(const std::string& pattern, TokenId id) {
  int node = 0;
  for (char byte : pattern) {
    const auto it = nodes[node].children.find(byte);
    if (it != nodes[node].children.end()) {
      node = it->second;
    } else {
      nodes.emplace_back();
      const int child = static_cast<int>(nodes.size()) - 1;
      nodes[node].children.emplace(byte, child);
      node = child;
    }
  }
  if (!nodes[node].token) nodes[node].token = id;
}

std::optional<std::pair<size_t, TokenId>> AddedVocabulary::Matcher::longest_at(
    std::string_view text, size_t pos) const {
  std::optional<std::pair<size_t, TokenId>> best;
  int node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it = nodes[node].children.find(text[i]);
    if (it == nodes[node].children.end()) break;
    node = it->second;
    if (nodes[node].token) best = std::make_pair(i + 1, *nodes[node].token);
  }
  return best;
}

AddedVocabulary::AddedVocabulary(const nlohmann::json& added_tokens, const Normalizer* normalizer) {
  if (!added_tokens.is_null() && !added_tokens.is_array()) {
    throw Error("[tokenizer.json] 'added_tokens' is not an array");
  }
  for (size_t i = 0; i < added_tokens.size(); ++i) {
    AddedToken token = parse_added_token(added_tokens[i], i);
    if (token.content.empty()) continue;
    by_content_[token.content] = token.id;
    if (token.special) special_contents_.insert(token.content);
    if (token.normalized) {
      std::string pattern = normalizer ? normalizer->normalize(token.content) : token.content;
      if (pattern != token.content) normalized_content_[token.id] = pattern;
      normalized_matcher_.insert(pattern, token.id);
      has_normalized_ = true;
    } else {
      raw_matcher_.insert(token.content, token.id);
      has_raw_ = true;
    }
    by_id_[token.id] = std::move(token);
  }
}

std::optional<TokenId> AddedVocabulary::token_to_id(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

const std::string* AddedVocabulary::decode_string(TokenId id) const {
  if (const auto it = normalized_content_.find(id); it != normalized_content_.end()) {
    return &it->second;
  }
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second.content;
}

bool AddedVocabulary::is_special(std::string_view token) const {
  return special_contents_.count(std::string(token)) > 0;
}

// Mirrors AddedVocabulary::find_matches: leftmost-longest matches scanned
// left to right; a single_word token inside a word is skipped; lstrip/rstrip
// swallow the white space next to the token.
void AddedVocabulary::split(const Piece& piece, const Matcher& matcher,
                            std::vector<TextSegment>& out) const {
  const std::string_view text = piece.text;
  size_t segment_start = 0;
  const auto emit_text = [&](size_t begin, size_t end) {
    if (begin < end) {
      out.push_back(
          {std::nullopt,
           {std::string(text.substr(begin, end - begin)), piece.at_input_start && begin == 0}});
    }
  };
  for (size_t pos = 0; pos < text.size();) {
    const auto match = matcher.longest_at(text, pos);
    if (!match) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = match->first;
    const AddedToken& token = by_id_.at(match->second);
    pos = stop;
    if (token.single_word && ((start > 0 && ends_with_word(text.substr(0, start))) ||
                              (stop < text.size() && starts_with_word(text.substr(stop))))) {
      continue;
    }
    if (token.lstrip) {
      start = std::max(start - unicode::trailing_white_space(text.substr(0, start)), segment_start);
    }
    if (token.rstrip) stop += unicode::leading_white_space(text.substr(stop));
    emit_text(segment_start, start);
    out.push_back({token.id, {std::string(text.substr(start, stop - start)), false}});
    segment_start = stop;
    pos = stop;
  }
  emit_text(segment_start, text.size());
}

std::vector<TextSegment> AddedVocabulary::extract_and_normalize(
    std::string_view text, const Normalizer* normalizer) const {
  std::vector<TextSegment> raw;
  const Piece whole{std::string(text), true};
  if (has_raw_) {
    split(whole, raw_matcher_, raw);
  } else if (!text.empty()) {
    raw.push_back({std::nullopt, whole});
  }
  std::vector<TextSegment> result;
  result.reserve(raw.size());
  for (auto& segment : raw) {
    if (segment.token) {
      result.push_back(std::move(segment));
      continue;
    }
    if (normalizer) segment.text.text = normalizer->normalize(std::move(segment.text.text));
    if (has_normalized_) {
      split(segment.text, normalized_matcher_, result);
    } else if (!segment.text.text.empty()) {
      result.push_back(std::move(segment));
    }
  }
  return result;
}

}  // namespace mlx_cpp
