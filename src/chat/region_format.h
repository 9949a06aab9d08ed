#pragma once
// The shape most tool-call formats share: content, with regions of markup
// (one call, or a block of calls) somewhere inside it. A format says where a
// region may start and how to read one; RegionFormat does the rest of the
// scan: content between regions, holding back what is undecided, and
// dropping the whitespace that separates content from markup.
#include "chat/tool_call_format.h"

namespace mlx_cpp::chat {

struct RegionStart {
  enum class Status {
    none,     // no region starts at or after `from`
    partial,  // the text ends in what may become a start (held back)
    found,
  } status = Status::none;
  size_t begin = 0;
};

struct Region {
  enum class Status {
    rejected,  // not markup after all: its first byte is content
    open,      // still being written: pieces so far
    closed,    // ends at `end` (trailing whitespace included)
  } status = Status::rejected;
  size_t end = 0;
  std::vector<Piece> pieces;  // calls (or reasoning), in order
};

class RegionFormat : public ToolCallFormat {
 public:
  Scan scan(std::string_view text, size_t from, bool at_end,
            const ToolContext& context) const final;

 protected:
  virtual RegionStart find_start(std::string_view text, size_t from,
                                 const ToolContext& context) const = 0;
  // Reads the region starting at text[begin]. With at_end it never returns
  // open: a region cut short is closed as it stands, or rejected. The
  // whitespace after a closed region is skipped by the caller.
  virtual Region read_region(std::string_view text, size_t begin, bool at_end,
                             const ToolContext& context) const = 0;
};

// Helpers for find_start: where `marker` occurs at or after `from`, or where
// the text ends in a prefix of it.
RegionStart find_marker(std::string_view text, size_t from, std::string_view marker);
// The earlier of two starts (found beats partial at the same place).
RegionStart earliest(RegionStart a, RegionStart b);
// One closed call piece.
Piece call_piece(std::string name, std::string arguments, bool closed, std::string id = "");

}  // namespace mlx_cpp::chat
