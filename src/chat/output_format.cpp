#include "chat/output_format.h"

#include "chat/tool_call_detection.h"

namespace mlx_cpp::chat {
namespace {

// Think tags in the order mlx-lm looks for them.
const std::vector<ReasoningMarkers>& known_think_tags() {
  static const std::vector<ReasoningMarkers> tags = {{"<think>", "</think>"},
                                                     {"<longcat_think>", "</longcat_think>"},
                                                     {"<|think:start|>", "<|think:end|>"}};
  return tags;
}

ReasoningMarkers detect_think_tags(const OutputFormatSources& sources) {
  for (const auto& tags : known_think_tags()) {
    const bool tokens =
        sources.is_token && sources.is_token(tags.start) && sources.is_token(tags.end);
    const bool written = sources.template_source.find(tags.start) != std::string::npos &&
                         sources.template_source.find(tags.end) != std::string::npos;
    if (tokens || written) return tags;
  }
  return {};
}

}  // namespace

std::vector<std::string> OutputFormat::marker_tokens() const {
  std::vector<std::string> markers;
  if (tool_calls) markers = tool_calls->marker_tokens();
  if (!reasoning.empty()) {
    markers.push_back(reasoning.start);
    markers.push_back(reasoning.end);
  }
  return markers;
}

ThinkingMarkup OutputFormat::thinking_markup() const {
  if (tool_calls && tool_calls->parses_reasoning()) return tool_calls->thinking_markup();
  if (reasoning.empty()) return {};
  // Templates write a blank line between the block and the answer.
  return {reasoning.start, reasoning.end, reasoning.end + "\n\n"};
}

OutputFormat detect_output_format(const OutputFormatSources& sources) {
  OutputFormat format;
  std::string rendered;
  if (sources.chat_template)
    rendered = render_probe_call(*sources.chat_template, sources.template_variables);
  format.tool_calls = detect_tool_call_format(rendered, sources.template_source);
  format.tool_calls_from_template = format.tool_calls != nullptr;
  if (format.tool_calls_from_template) format.rendered_call = rendered;
  // A template that writes no calls still gets Hermes' JSON format: asked
  // for calls, small models mostly write {"name", "arguments"}, bare or
  // fenced, which it reads (and a forced call can use its markup).
  if (!format.tool_calls) format.tool_calls = &tool_call_format("hermes");
  if (!format.tool_calls || !format.tool_calls->parses_reasoning())
    format.reasoning = detect_think_tags(sources);
  return format;
}

}  // namespace mlx_cpp::chat
