#include "chat/reasoning_splitter.h"

#include "chat/json_scan.h"

namespace mlx_cpp::chat {
namespace {

// The length of the longest suffix of text that is a proper prefix of marker.
size_t partial_marker_length(std::string_view text, std::string_view marker) {
  for (size_t length = std::min(text.size(), marker.size() - 1); length > 0; --length)
    if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
  return 0;
}

size_t trailing_space_length(std::string_view text) {
  size_t length = 0;
  while (length < text.size() && json_scan::is_space(text[text.size() - 1 - length])) ++length;
  return length;
}

}  // namespace

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers) {
  if (markers.empty()) return false;
  const size_t start = prompt.rfind(markers.start);
  if (start == std::string_view::npos) return false;
  return prompt.find(markers.end, start + markers.start.size()) == std::string_view::npos;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers, bool starts_inside)
    : markers_(std::move(markers)), state_(starts_inside ? State::reasoning : State::before) {}

OutputDelta ReasoningSplitter::feed(std::string_view text) {
  pending_.append(text);
  return advance(false);
}

OutputDelta ReasoningSplitter::finish() {
  return advance(true);
}

OutputDelta ReasoningSplitter::advance(bool at_end) {
  OutputDelta delta;
  while (true) {
    if (state_ == State::before) {
      // Only whitespace so far: is it the start of a block, or the answer?
      const size_t first = json_scan::skip_space(pending_, 0);
      const std::string_view rest = std::string_view(pending_).substr(first);
      if (rest.substr(0, markers_.start.size()) == markers_.start) {
        pending_.erase(0, first + markers_.start.size());
        state_ = State::reasoning;
        skip_space_ = true;
        continue;
      }
      const bool may_still_start =
          rest.size() < markers_.start.size() && markers_.start.compare(0, rest.size(), rest) == 0;
      if (may_still_start && !at_end) return delta;
      state_ = State::content;
      skip_space_ = false;  // an answer without a block is passed on unchanged
      continue;
    }
    if (skip_space_) {
      const size_t first = json_scan::skip_space(pending_, 0);
      if (first == pending_.size() && !at_end) {
        return delta;  // whitespace alone: it may still all be dropped
      }
      pending_.erase(0, first);
      skip_space_ = false;
    }
    if (state_ == State::content) {
      delta.content += pending_;
      pending_.clear();
      return delta;
    }
    // Reasoning: up to the end marker, holding back a partial marker and
    // the whitespace before it.
    const size_t end = pending_.find(markers_.end);
    if (end != std::string::npos) {
      std::string_view block = std::string_view(pending_).substr(0, end);
      delta.reasoning += block.substr(0, block.size() - trailing_space_length(block));
      pending_.erase(0, end + markers_.end.size());
      state_ = State::content;
      skip_space_ = true;
      continue;
    }
    if (at_end) {
      delta.reasoning += pending_;
      pending_.clear();
      return delta;
    }
    std::string_view text = pending_;
    size_t keep = partial_marker_length(text, markers_.end);
    keep += trailing_space_length(text.substr(0, text.size() - keep));
    delta.reasoning += pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return delta;
  }
}

}  // namespace mlx_cpp::chat
