#pragma once
// The test templates (MLX_CPP_TESTDATA/chat-templates) and what they write
// for the probe call, for the format tests that check detection; and a
// check that a whole answer leaves no call open.
#include <fstream>
#include <sstream>
#include <string>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "template/chat_template.h"

namespace mlx_cpp::chat::testing {

inline std::string read_test_template(const std::string& file) {
  std::ifstream in(std::string(MLX_CPP_TESTDATA) + "/chat-templates/" + file);
  std::stringstream source;
  source << in.rdbuf();
  return source.str();
}

inline std::string probe_rendering(const std::string& template_file) {
  return render_probe_call(ChatTemplate(read_test_template(template_file)),
                           {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
}

// With at_end nothing stays open: every call piece of the last scan is closed.
inline bool calls_close_at_end(const ToolCallFormat& format, const std::string& text) {
  for (const auto& piece : format.scan(text, 0, /*at_end=*/true, ToolContext{}).pieces)
    if (piece.kind == PieceKind::call && !piece.closed) return false;
  return true;
}

}  // namespace mlx_cpp::chat::testing
