#pragma once
// GPT-2's byte-to-character table: every byte maps to a printable character
// so that byte-level BPE vocabularies are plain strings.
#include <optional>
#include <string>
#include <string_view>

namespace mlx_cpp::byte_level {

// Maps every byte of text to its character (UTF-8 encoded).
std::string encode(std::string_view text);

// Maps the characters of token back to bytes; nullopt when some character is
// not in the table (tokenizers then keeps the token's own bytes).
std::optional<std::string> decode(std::string_view token);

}  // namespace mlx_cpp::byte_level
