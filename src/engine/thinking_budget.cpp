#include "engine/thinking_budget.h"

namespace mlx_cpp {

ThinkingBudget thinking_budget(const chat::OutputFormat& format, int tokens,
                               std::string_view rendered_prompt) {
  const auto markup = format.thinking_markup();
  if (tokens < 0 || markup.empty()) return {};
  return {tokens, markup,
          chat::prompt_opens_reasoning(rendered_prompt, {markup.start, markup.end})};
}

ThinkingTracker::ThinkingTracker(ThinkingBudget budget)
    : budget_(std::move(budget)), state_(budget_.starts_inside ? State::inside : State::before) {
  if (spent_at_start()) state_ = State::after;
}

bool ThinkingTracker::find(const std::string& marker) {
  const auto at = recent_.find(marker);
  if (at != std::string::npos) {
    recent_.erase(0, at + marker.size());
    return true;
  }
  if (recent_.size() >= marker.size()) recent_.erase(0, recent_.size() - (marker.size() - 1));
  return false;
}

bool ThinkingTracker::add_token(std::string_view text) {
  if (state_ == State::after) return false;
  recent_ += text;
  if (state_ == State::before) {
    // The token that writes the start markup opens the block; it is not
    // reasoning itself.
    if (budget_.markup.start.empty() || !find(budget_.markup.start)) return false;
    state_ = State::inside;
    if (find(budget_.markup.end)) {
      state_ = State::after;
      return false;
    }
    if (budget_.tokens > 0) return false;
  } else {
    if (find(budget_.markup.end)) {  // the model closed the block itself
      state_ = State::after;
      return false;
    }
    if (++reasoning_tokens_ < budget_.tokens) return false;
  }
  state_ = State::after;
  return true;
}

}  // namespace mlx_cpp
