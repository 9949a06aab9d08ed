#pragma once
// Drives a ToolCallFormat over an answer as it arrives, and turns its scans
// into deltas: content text, and tool calls as OpenAI streams them (the id
// and name first, then fragments of the arguments). A whole answer is the
// same stream fed at once, so streamed and whole responses cannot differ.
#include <string>
#include <vector>

#include "chat/tool_call_format.h"

namespace mlx_cpp::chat {

struct ToolCallDelta {
  int index = 0;     // the call's place in the answer
  std::string id;    // first delta of a call only
  std::string name;  // first delta of a call only
  std::string arguments;
};

struct OutputDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
  void append(OutputDelta other);
};

class ToolCallStream {
 public:
  // max_calls: calls after this many are dropped (parallel_tool_calls=false
  // gives 1); 0 means no limit.
  ToolCallStream(const ToolCallFormat& format, ToolContext context, int max_calls = 0);
  OutputDelta feed(std::string_view text);
  OutputDelta finish();
  int calls() const { return next_call_index_; }
  // Scans that took back what an earlier one showed (a format bug); the
  // stream never un-sends, so these are kept as first sent. Tests read it.
  int contract_violations() const { return violations_; }

 private:
  struct Shown {
    PieceKind kind = PieceKind::content;
    size_t text_bytes = 0;      // content / reasoning sent
    size_t argument_bytes = 0;  // call arguments sent
    int call_index = -1;        // -1: a call beyond max_calls, dropped
    std::string name;
  };
  OutputDelta advance(bool at_end);
  void show(const Piece& piece, Shown& shown, bool is_new, OutputDelta& delta);
  std::string new_call_id() const;

  const ToolCallFormat& format_;
  ToolContext context_;
  int max_calls_;
  std::string text_;
  size_t settled_ = 0;
  std::vector<Shown> shown_;  // the pieces after settled_, as sent so far
  int next_call_index_ = 0;
  int violations_ = 0;
  bool finished_ = false;
};

}  // namespace mlx_cpp::chat
