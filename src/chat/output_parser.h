#pragma once
// What a model writes, parsed into content, reasoning and tool calls as it
// arrives: the layer between the chat template and the front ends (server,
// CLI, web page). The reasoning splitter runs first, so markup inside a
// think block stays reasoning; the content then goes through the model's
// tool-call format when the request offered tools.
#include <memory>
#include <optional>
#include <string>

#include "chat/output_format.h"
#include "chat/tool_call_stream.h"

namespace mlx_cpp::chat {

struct OutputOptions {
  bool parse_reasoning = true;       // false (--reasoning-format none): reasoning stays in content
  bool starts_in_reasoning = false;  // the prompt opened the think block
  bool parse_tool_calls = false;     // the request offered tools (and tool_choice is not none)
  ToolContext tools;
  int max_calls = 0;  // 1 when parallel_tool_calls is false; 0: no limit
};

// The whole answer, as the deltas add up.
struct ParsedMessage {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  void add(const OutputDelta& delta);
};

class OutputParser {
 public:
  OutputParser(const OutputFormat& format, OutputOptions options);
  OutputDelta feed(std::string_view text);
  OutputDelta finish();
  const ParsedMessage& message() const { return message_; }

 private:
  OutputDelta after_reasoning(OutputDelta delta, bool at_end);

  std::optional<ReasoningSplitter> reasoning_;
  std::optional<ToolCallStream> tool_calls_;
  bool keep_calls_ = false;  // tools were offered; else the format runs for reasoning only
  ParsedMessage message_;
};

}  // namespace mlx_cpp::chat
