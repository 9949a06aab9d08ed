#pragma once
// Unicode text operations normalizers need, on UTF-8 strings.
#include <string>
#include <string_view>

namespace mlx_cpp::unicode {

// Normalization Form C (canonical decomposition, canonical ordering,
// canonical composition). Text below U+0300 is returned unchanged quickly.
std::string nfc(std::string_view text);

// Full lowercase mapping per code point (no final-sigma context rule).
std::string lowercase(std::string_view text);

// Unicode White_Space (what \s means in the regexes tokenizers uses).
bool is_white_space(char32_t code_point);

// Byte length of the white space at the start / end of text.
size_t leading_white_space(std::string_view text);
size_t trailing_white_space(std::string_view text);

// Removes leading and/or trailing Unicode white space.
std::string strip_whitespace(std::string_view text, bool left, bool right);

}  // namespace mlx_cpp::unicode
