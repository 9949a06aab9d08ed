#include "tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace mlx_cpp::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  std::unordered_map<char32_t, unsigned char> char_to_byte;
};

// Printable bytes map to themselves; the others to U+0100 onwards in order.
const Tables& tables() {
  static const Tables built = [] {
    Tables result;
    char32_t next_unprintable = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                             (byte >= 0xAE && byte <= 0xFF);
      const char32_t mapped = printable ? static_cast<char32_t>(byte) : next_unprintable++;
      result.byte_to_char[byte] = utf8::encode(mapped);
      result.char_to_byte[mapped] = static_cast<unsigned char>(byte);
    }
    return result;
  }();
  return built;
}

}  // namespace

std::string encode(std::string_view text) {
  const auto& table = tables().byte_to_char;
  std::string out;
  out.reserve(text.size() * 2);
  for (char byte : text) out += table[static_cast<unsigned char>(byte)];
  return out;
}

std::optional<std::string> decode(std::string_view token) {
  const auto& table = tables().char_to_byte;
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    size_t length = 0;
    const char32_t code_point = utf8::decode(token, pos, length);
    const auto it = table.find(code_point);
    if (it == table.end() || (length == 1 && code_point == 0xFFFD)) return std::nullopt;
    out += static_cast<char>(it->second);
    pos += length;
  }
  return out;
}

}  // namespace mlx_cpp::byte_level
