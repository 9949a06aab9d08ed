#include "chat/tool_call_detection.h"

#include "io/error.h"

namespace mlx_cpp::chat {

nlohmann::ordered_json probe_messages() {
  return nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", "What is the weather in Paris?"}},
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls",
         nlohmann::ordered_json::array(
             {{{"id", "abcDEF123"},
               {"type", "function"},
               {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}})}}});
}

nlohmann::ordered_json probe_tools() {
  return nlohmann::ordered_json::array({{{"type", "function"},
                                         {"function",
                                          {{"name", "get_weather"},
                                           {"description", "Current weather in a city"},
                                           {"parameters",
                                            {{"type", "object"},
                                             {"properties", {{"city", {{"type", "string"}}}}},
                                             {"required", {"city"}}}}}}}});
}

namespace {

std::string render_probe_with(const ChatTemplate& chat_template, nlohmann::ordered_json context,
                              const nlohmann::ordered_json& messages) {
  context["tools"] = probe_tools();
  context["messages"] = nlohmann::ordered_json::array({messages[0]});
  context["add_generation_prompt"] = true;
  const std::string question = chat_template.render(context);
  context["messages"] = messages;
  context["add_generation_prompt"] = false;
  const std::string whole = chat_template.render(context);
  size_t common = 0;
  while (common < question.size() && common < whole.size() && question[common] == whole[common])
    ++common;
  return whole.substr(common);
}

}  // namespace

std::string render_probe_call(const ChatTemplate& chat_template,
                              const nlohmann::ordered_json& variables) {
  auto messages = probe_messages();
  try {
    return render_probe_with(chat_template, variables, messages);
  } catch (const Error&) {
  }
  // Some templates join the arguments as text: the same call, with
  // OpenAI's JSON-string arguments.
  auto& function = messages[1]["tool_calls"][0]["function"];
  function["arguments"] = function["arguments"].dump();
  try {
    return render_probe_with(chat_template, variables, messages);
  } catch (const Error&) {
    return "";
  }
}

const ToolCallFormat* detect_tool_call_format(std::string_view rendered_call,
                                              std::string_view template_source) {
  if (!rendered_call.empty())
    for (const auto& format : tool_call_formats())
      if (format->renders(rendered_call)) return format.get();
  for (const auto& format : tool_call_formats())
    if (format->renders(template_source)) return format.get();
  return nullptr;
}

}  // namespace mlx_cpp::chat
