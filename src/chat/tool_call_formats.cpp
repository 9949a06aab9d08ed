#include "chat/tool_call_formats.h"

#include "io/error.h"

namespace mlx_cpp::chat {

bool ToolContext::offers(std::string_view name) const {
  return parameters_of(name) != nullptr;
}

const nlohmann::ordered_json* ToolContext::parameters_of(std::string_view name) const {
  static const nlohmann::ordered_json kNoSchema = nlohmann::ordered_json::object();
  for (const auto& tool : tools) {
    if (!tool.is_object()) continue;
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) continue;
    auto tool_name = function->find("name");
    if (tool_name == function->end() || !tool_name->is_string() || *tool_name != name) continue;
    auto parameters = function->find("parameters");
    return parameters != function->end() && parameters->is_object() ? &*parameters : &kNoSchema;
  }
  return nullptr;
}

const std::vector<std::unique_ptr<ToolCallFormat>>& tool_call_formats() {
  static const auto formats = [] {
    std::vector<std::unique_ptr<ToolCallFormat>> list;
    list.push_back(make_harmony_format());
    list.push_back(make_kimi_k2_format());
    list.push_back(make_deepseek_v3_format());
    list.push_back(make_qwen3_coder_format());
    list.push_back(make_glm45_format());
    list.push_back(make_mistral_format());
    list.push_back(make_command_r_format());
    list.push_back(make_hermes_format());
    list.push_back(make_pythonic_format());
    list.push_back(make_llama3_json_format());
    return list;
  }();
  return formats;
}

std::vector<std::string> tool_call_format_names() {
  std::vector<std::string> names;
  for (const auto& format : tool_call_formats()) names.emplace_back(format->name());
  return names;
}

const ToolCallFormat& tool_call_format(std::string_view name) {
  for (const auto& format : tool_call_formats())
    if (format->name() == name) return *format;
  std::string known;
  for (const auto& known_name : tool_call_format_names())
    known += (known.empty() ? "" : ", ") + known_name;
  throw Error("unknown tool-call format '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace mlx_cpp::chat
