#pragma once
// UTF-8 helpers the tokenizer needs: walking code points, encoding them,
// Rust-compatible lossy repair (what `tokenizers` uses when bytes decode to
// invalid UTF-8), and finding where a byte string stops being complete text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlx_cpp::utf8 {

// Byte length of the (possibly invalid) sequence starting at text[pos]:
// the length of a well-formed code point, or 1 for an invalid byte.
size_t char_length(std::string_view text, size_t pos);

// Decodes the code point at text[pos] (assumes valid UTF-8 there); sets
// length to its byte count. Returns U+FFFD for an invalid byte (length 1).
char32_t decode(std::string_view text, size_t pos, size_t& length);

// Appends the UTF-8 encoding of code_point to out.
void append(std::string& out, char32_t code_point);
std::string encode(char32_t code_point);

// Splits text into its code points as substrings (one per character).
std::vector<std::string_view> split_chars(std::string_view text);

// Replaces each maximal invalid subsequence with U+FFFD, exactly like Rust's
// String::from_utf8_lossy and Python's bytes.decode(errors="replace").
std::string repair_lossy(std::string_view bytes);

bool is_valid(std::string_view bytes);

// Length of the longest prefix of text that ends on a complete character:
// a trailing sequence that is the valid start of a longer character is left
// out (it may still be completed by more bytes).
size_t complete_prefix_length(std::string_view text);

}  // namespace mlx_cpp::utf8
