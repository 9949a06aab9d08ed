#include <string_view>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

bool ends_incomplete(std::string_view text) {
  return utf8::complete_prefix_length(text) != text.size() ||
         (text.size() >= 3 && text.substr(text.size() - 3) == kReplacementCharacter);
}

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer,
                                           std::unordered_set<TokenId> kept)
    : tokenizer_(tokenizer), kept_(std::move(kept)) {}

std::string StreamingDetokenizer::decode_ids(const std::vector<TokenId>& ids) const {
  if (kept_.empty()) return tokenizer_.decode(ids, true);
  // Special tokens other than the kept ones are dropped before one decode
  // of the rest, so the decoder sees the kept markers in place.
  std::vector<TokenId> shown;
  shown.reserve(ids.size());
  for (TokenId id : ids)
    if (kept_.count(id) || !tokenizer_.is_special_token(id)) shown.push_back(id);
  return tokenizer_.decode(shown, false);
}

std::string StreamingDetokenizer::decode_range(size_t begin, size_t end) const {
  return decode_ids(std::vector<TokenId>(ids_.begin() + begin, ids_.begin() + end));
}

std::string StreamingDetokenizer::add(TokenId id) {
  ids_.push_back(id);
  const std::string before = decode_range(window_start_, emitted_ids_);
  const std::string after = decode_range(window_start_, ids_.size());
  if (after.size() <= before.size() || after.compare(0, before.size(), before) != 0 ||
      ends_incomplete(after)) {
    return "";
  }
  std::string piece = after.substr(before.size());
  // The next window starts where this piece's tokens start: a character
  // boundary (the text was complete there) that still gives the new tokens
  // their left context (leading-space rules, byte runs).
  window_start_ = emitted_ids_;
  emitted_ids_ = ids_.size();
  emitted_bytes_ += piece.size();
  return piece;
}

std::string StreamingDetokenizer::finish() {
  // One full decode: whatever the window held back is exactly the rest.
  const std::string full = decode_ids(ids_);
  std::string rest = full.size() > emitted_bytes_ ? full.substr(emitted_bytes_) : "";
  emitted_ids_ = ids_.size();
  emitted_bytes_ = full.size();
  return utf8::repair_lossy(rest);
}

void StreamingDetokenizer::reset() {
  ids_.clear();
  window_start_ = 0;
  emitted_ids_ = 0;
  emitted_bytes_ = 0;
}

}  // namespace mlx_cpp
