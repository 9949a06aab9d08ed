#pragma once
// Splits an answer into reasoning and content where the model thinks
// between tags (<think>…</think> as Qwen3 and DeepSeek-R1 write it). The
// block may open in the prompt (templates that end their generation prompt
// with <think>), so the answer can start inside it. Markup inside the block
// is reasoning: only what follows it reaches the tool-call parser.
#include <string>
#include <string_view>

#include "chat/tool_call_stream.h"

namespace mlx_cpp::chat {

struct ReasoningMarkers {
  std::string start;  // empty: the model does not think in tags
  std::string end;
  bool empty() const { return start.empty(); }
};

// Whether `prompt` ends inside a reasoning block (its last start marker has
// no end marker after it).
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers);

class ReasoningSplitter {
 public:
  ReasoningSplitter(ReasoningMarkers markers, bool starts_inside);
  // Reasoning and content text; the whitespace around the block's contents
  // and before the answer is dropped (held until it is known to be that).
  OutputDelta feed(std::string_view text);
  OutputDelta finish();
  bool inside() const { return state_ == State::reasoning; }

 private:
  enum class State { before, reasoning, content };
  OutputDelta advance(bool at_end);

  ReasoningMarkers markers_;
  State state_;
  std::string pending_;     // text not yet given out
  bool skip_space_ = true;  // at the start of the block or of the answer after it
};

}  // namespace mlx_cpp::chat
