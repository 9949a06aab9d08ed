#include "tokenizer/utf8.h"

namespace mlx_cpp::utf8 {
namespace {

// Expected total length of a sequence led by `lead`, 0 if it cannot lead.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `byte` may follow `lead` as the second byte (the ranges of the
// Unicode well-formed table; later bytes are plain continuation bytes).
bool valid_second(unsigned char lead, unsigned char byte) {
  if (lead == 0xE0) return byte >= 0xA0 && byte <= 0xBF;
  if (lead == 0xED) return byte >= 0x80 && byte <= 0x9F;
  if (lead == 0xF0) return byte >= 0x90 && byte <= 0xBF;
  if (lead == 0xF4) return byte >= 0x80 && byte <= 0x8F;
  return byte >= 0x80 && byte <= 0xBF;
}

// Number of bytes at text[pos] that form a valid (possibly truncated) prefix
// of a well-formed sequence; `complete` says whether the sequence is whole.
size_t valid_prefix(std::string_view text, size_t pos, bool& complete) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t expected = sequence_length(lead);
  complete = expected == 1;
  if (expected <= 1) return 1;
  size_t length = 1;
  while (length < expected && pos + length < text.size()) {
    const auto byte = static_cast<unsigned char>(text[pos + length]);
    const bool ok = length == 1 ? valid_second(lead, byte) : (byte & 0xC0) == 0x80;
    if (!ok) break;
    ++length;
  }
  complete = length == expected;
  return length;
}

}  // namespace

size_t char_length(std::string_view text, size_t pos) {
  bool complete = false;
  const size_t length = valid_prefix(text, pos, complete);
  return complete ? length : 1;
}

char32_t decode(std::string_view text, size_t pos, size_t& length) {
  length = char_length(text, pos);
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (length == 1) return lead < 0x80 ? lead : 0xFFFD;
  char32_t code_point = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  return code_point;
}

void append(std::string& out, char32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

std::string encode(char32_t code_point) {
  std::string out;
  append(out, code_point);
  return out;
}

std::vector<std::string_view> split_chars(std::string_view text) {
  std::vector<std::string_view> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = char_length(text, pos);
    chars.push_back(text.substr(pos, length));
    pos += length;
  }
  return chars;
}

std::string repair_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    bool complete = false;
    const size_t length = valid_prefix(bytes, pos, complete);
    if (complete) {
      out.append(bytes.substr(pos, length));
    } else {
      out += "\xEF\xBF\xBD";  // one U+FFFD per maximal invalid subpart
    }
    pos += length;
  }
  return out;
}

bool is_valid(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    bool complete = false;
    const size_t length = valid_prefix(bytes, pos, complete);
    if (!complete) return false;
    pos += length;
  }
  return true;
}

size_t complete_prefix_length(std::string_view text) {
  // A character is at most 4 bytes: only the last 3 can be a truncated start.
  const size_t scan_from = text.size() > 3 ? text.size() - 3 : 0;
  for (size_t pos = scan_from; pos < text.size(); ++pos) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if ((byte & 0xC0) == 0x80) continue;  // continuation byte
    bool complete = false;
    const size_t length = valid_prefix(text, pos, complete);
    if (!complete && length > 0 && pos + length == text.size() && sequence_length(byte) > 1) {
      return pos;
    }
  }
  return text.size();
}

}  // namespace mlx_cpp::utf8
