#include "chat/output_parser.h"

namespace mlx_cpp::chat {

void ParsedMessage::add(const OutputDelta& delta) {
  content += delta.content;
  reasoning += delta.reasoning;
  for (const auto& call : delta.tool_calls) {
    if (call.index >= static_cast<int>(tool_calls.size())) tool_calls.resize(call.index + 1);
    auto& target = tool_calls[call.index];
    if (!call.id.empty()) target.id = call.id;
    if (!call.name.empty()) target.name = call.name;
    target.arguments += call.arguments;
  }
}

OutputParser::OutputParser(const OutputFormat& format, OutputOptions options) {
  const ToolCallFormat* tool_format = format.tool_calls;
  const bool format_finds_reasoning = tool_format && tool_format->parses_reasoning();
  if (options.parse_reasoning && !format.reasoning.empty() && !format_finds_reasoning)
    reasoning_.emplace(format.reasoning, options.starts_in_reasoning);
  // A format that finds reasoning itself runs whether or not tools were
  // offered; without them its calls are dropped (harmony's `to=functions.f`
  // needs no offered tool), as a request without tools or with tool_choice
  // none must get none back.
  keep_calls_ = options.parse_tool_calls;
  if (tool_format &&
      (options.parse_tool_calls || (format_finds_reasoning && options.parse_reasoning)))
    tool_calls_.emplace(*tool_format, std::move(options.tools), options.max_calls);
}

OutputDelta OutputParser::feed(std::string_view text) {
  OutputDelta delta;
  if (reasoning_) {
    delta = reasoning_->feed(text);
  } else {
    delta.content = std::string(text);
  }
  delta = after_reasoning(std::move(delta), false);
  message_.add(delta);
  return delta;
}

OutputDelta OutputParser::finish() {
  OutputDelta delta = reasoning_ ? reasoning_->finish() : OutputDelta{};
  delta = after_reasoning(std::move(delta), true);
  message_.add(delta);
  return delta;
}

OutputDelta OutputParser::after_reasoning(OutputDelta delta, bool at_end) {
  if (!tool_calls_) return delta;
  OutputDelta parsed;
  parsed.reasoning = std::move(delta.reasoning);
  if (!delta.content.empty()) parsed.append(tool_calls_->feed(delta.content));
  if (at_end) parsed.append(tool_calls_->finish());
  if (!keep_calls_) parsed.tool_calls.clear();
  return parsed;
}

}  // namespace mlx_cpp::chat
