#pragma once
// A limit on how long a model thinks. The engine watches the text a
// sequence writes for the think block's markup and counts the tokens
// written inside it; once the budget is spent it writes the block's closing
// markup itself, and the answer follows.
#include <string>
#include <string_view>

#include "chat/output_format.h"

namespace mlx_cpp {

struct ThinkingBudget {
  int tokens = -1;              // reasoning tokens allowed; < 0: no limit
  chat::ThinkingMarkup markup;  // the block's start and end, and what closes it
  bool starts_inside = false;   // the prompt opened the block
  bool enabled() const { return tokens >= 0 && !markup.empty() && !markup.close.empty(); }
};

// A budget of `tokens` for an answer to `rendered_prompt`, in the markup
// of the model's output format; disabled when tokens < 0 or the model does
// not think.
ThinkingBudget thinking_budget(const chat::OutputFormat& format, int tokens,
                               std::string_view rendered_prompt);

// Follows one sequence's text, token by token.
class ThinkingTracker {
 public:
  explicit ThinkingTracker(ThinkingBudget budget);
  // Whether the block must be closed before the first token (a zero
  // budget on a prompt that opened it).
  bool spent_at_start() const { return budget_.starts_inside && budget_.tokens == 0; }
  // The text one delivered token added (after detokenizing). True when
  // this token spent the budget: the engine closes the block now.
  bool add_token(std::string_view text);
  int reasoning_tokens() const { return reasoning_tokens_; }
  bool inside() const { return state_ == State::inside; }

 private:
  enum class State { before, inside, after };
  // Looks for `marker` in the recent text; keeps what follows it, or the
  // tail where it may still be forming.
  bool find(const std::string& marker);

  ThinkingBudget budget_;
  State state_;
  std::string recent_;  // text since the last marker that may hold the next one
  int reasoning_tokens_ = 0;
};

}  // namespace mlx_cpp
