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

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

std::string StreamingDetokenizer::decode_range(size_t begin, size_t end) const {
  return tokenizer_.decode(std::vector<TokenId>(ids_.begin() + begin, ids_.begin() + end), true);
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
  const std::string full = tokenizer_.decode(ids_, true);
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
