#pragma once
// Which tool-call format a chat template writes: the template renders a
// probe conversation holding one call, and each format is asked whether
// that rendering is written in it (tool_call_formats() order).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/tool_call_format.h"
#include "template/chat_template.h"

namespace mlx_cpp::chat {

// The probe: a user question, then an assistant turn calling
// get_weather(city="Paris") with id "abcDEF123" (nine alphanumerics, which
// every template accepts), and the get_weather tool offered.
nlohmann::ordered_json probe_messages();
nlohmann::ordered_json probe_tools();

// What the template writes for the probe's assistant turn: the rendering of
// the whole conversation past the rendering of the question with its
// generation prompt. Empty when the template refuses the probe.
std::string render_probe_call(const ChatTemplate& chat_template,
                              const nlohmann::ordered_json& variables);

// The format of `rendered_call`, else the first format whose markup the
// template's source holds (templates that refuse the probe), else null.
const ToolCallFormat* detect_tool_call_format(std::string_view rendered_call,
                                              std::string_view template_source);

}  // namespace mlx_cpp::chat
