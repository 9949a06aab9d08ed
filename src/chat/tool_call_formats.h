#pragma once
// The formats, one file each (named <format>_format.cpp). The registry in
// tool_call_formats.cpp lists them in the order detection asks them.
#include <memory>

#include "chat/tool_call_format.h"

namespace mlx_cpp::chat {

std::unique_ptr<ToolCallFormat> make_harmony_format();
std::unique_ptr<ToolCallFormat> make_kimi_k2_format();
std::unique_ptr<ToolCallFormat> make_deepseek_v3_format();
std::unique_ptr<ToolCallFormat> make_qwen3_coder_format();
std::unique_ptr<ToolCallFormat> make_glm45_format();
std::unique_ptr<ToolCallFormat> make_mistral_format();
std::unique_ptr<ToolCallFormat> make_command_r_format();
std::unique_ptr<ToolCallFormat> make_hermes_format();
std::unique_ptr<ToolCallFormat> make_pythonic_format();
std::unique_ptr<ToolCallFormat> make_llama3_json_format();

}  // namespace mlx_cpp::chat
