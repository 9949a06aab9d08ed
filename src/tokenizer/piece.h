#pragma once
// The unit that flows through normalizers and pre-tokenizers: a piece of
// text and whether it begins at offset 0 of the original input (Metaspace's
// "first" prepend scheme needs to know).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace mlx_cpp {

struct Piece {
  std::string text;
  bool at_input_start = false;
};

// How a split keeps the delimiters it finds (tokenizers'
// SplitDelimiterBehavior).
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

SplitBehavior parse_split_behavior(const std::string& name);

// Splits piece at the given matches ([begin, end) byte ranges, sorted and
// non-overlapping) following behavior; invert swaps matches and gaps. Empty
// results are dropped, as tokenizers does.
void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<Piece>& out);

}  // namespace mlx_cpp
