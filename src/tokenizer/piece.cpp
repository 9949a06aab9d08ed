#include "tokenizer/piece.h"

#include "io/error.h"

namespace mlx_cpp {
namespace {

struct Segment {
  size_t begin;
  size_t end;
  bool is_match;
};

// The text cut into alternating gap / match segments that cover it whole.
std::vector<Segment> segments_of(size_t length,
                                 const std::vector<std::pair<size_t, size_t>>& matches,
                                 bool invert) {
  std::vector<Segment> segments;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous < begin) segments.push_back({previous, begin, invert});
    segments.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous < length) segments.push_back({previous, length, invert});
  return segments;
}

// Merges segments per behavior; the result lists the ranges to keep.
std::vector<Segment> apply_behavior(const std::vector<Segment>& segments, SplitBehavior behavior) {
  std::vector<Segment> kept;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::removed:
      for (const auto& segment : segments) {
        if (!segment.is_match) kept.push_back(segment);
      }
      return kept;
    case SplitBehavior::isolated:
      return segments;
    case SplitBehavior::contiguous:
      for (const auto& segment : segments) {
        if (!kept.empty() && segment.is_match == previous_match) {
          kept.back().end = segment.end;
        } else {
          kept.push_back(segment);
        }
        previous_match = segment.is_match;
      }
      return kept;
    case SplitBehavior::merged_with_previous:
      for (const auto& segment : segments) {
        if (!kept.empty() && segment.is_match && !previous_match) {
          kept.back().end = segment.end;
        } else {
          kept.push_back(segment);
        }
        previous_match = segment.is_match;
      }
      return kept;
    case SplitBehavior::merged_with_next:
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (!kept.empty() && it->is_match && !previous_match) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back(*it);
        }
        previous_match = it->is_match;
      }
      return {kept.rbegin(), kept.rend()};
  }
  return kept;
}

}  // namespace

SplitBehavior parse_split_behavior(const std::string& name) {
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  throw Error("[tokenizer.json] unknown split behavior '" + name +
              "' (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
  const auto segments = segments_of(piece.text.size(), matches, invert);
  for (const auto& segment : apply_behavior(segments, behavior)) {
    if (segment.end <= segment.begin) continue;
    out.push_back({piece.text.substr(segment.begin, segment.end - segment.begin),
                   piece.at_input_start && segment.begin == 0});
  }
}

}  // namespace mlx_cpp
