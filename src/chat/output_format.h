#pragma once
// How a model writes its answers: its tool-call format and its think tags,
// found once at load from the chat template and the vocabulary.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/reasoning_splitter.h"
#include "chat/tool_call_format.h"
#include "template/chat_template.h"

namespace mlx_cpp::chat {

struct OutputFormat {
  const ToolCallFormat* tool_calls = nullptr;  // null: answers are not parsed for calls
  bool tool_calls_from_template = false;       // the template writes calls in that format
  ReasoningMarkers reasoning;                  // empty: no think tags
  // The template's rendering of a probe call (empty without a template):
  // formats with variants read which one it writes.
  std::string rendered_call;
  // Special tokens the parser must see in the text (the detokenizer keeps them).
  std::vector<std::string> marker_tokens() const;
  // The think block's markup (the format's own, else the think tags');
  // empty when the model does not think.
  ThinkingMarkup thinking_markup() const;
};

struct OutputFormatSources {
  const ChatTemplate* chat_template = nullptr;  // null: a model without one
  std::string template_source;
  nlohmann::ordered_json template_variables = nlohmann::ordered_json::object();  // bos/eos...
  std::function<bool(std::string_view)> is_token;  // whether the vocabulary holds this token
};

// The tool-call format the template writes (see tool_call_detection.h) and
// the think tags the vocabulary holds as tokens (<think>…</think>, as
// mlx-lm looks for them) or the template writes.
OutputFormat detect_output_format(const OutputFormatSources& sources);

}  // namespace mlx_cpp::chat
