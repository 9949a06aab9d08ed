// Which format each chat template writes, from its rendering of the probe
// call (or its source, for templates that refuse the probe).
#include "chat/tool_call_detection.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/error.h"

namespace mlx_cpp::chat {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string detected(const std::string& template_file) {
  const auto path = std::filesystem::path(MLX_CPP_TESTDATA) / "chat-templates" / template_file;
  const std::string source = read_text(path);
  ChatTemplate chat_template(source);
  nlohmann::ordered_json variables = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  const auto* format = detect_tool_call_format(render_probe_call(chat_template, variables), source);
  return format ? std::string(format->name()) : "none";
}

TEST(ToolCallDetection, EachTemplateFamilyGetsItsFormat) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"glm_4_5.jinja", "glm45"},
      {"GLM-4.6.jinja", "glm45"},
      {"mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja", "mistral"},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command_r"},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek_v3"},
      {"deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v3"},
      {"DeepSeek-V3.2.jinja", "deepseek_v3"},
      {"Kimi-K2-Thinking.jinja", "kimi_k2"},
      {"moonshotai-Kimi-K2-Thinking.jinja", "kimi_k2"},
      {"LFM2.5-8B-A1B.jinja", "pythonic"},
      {"StepFun3.7-Flash.jinja", "qwen3_coder"},
  };
  for (const auto& [file, format] : expected) EXPECT_EQ(detected(file), format) << file;
}

TEST(ToolCallDetection, AProbeRenderingIsReadByItsOwnFormatOnly) {
  // Every format recognises a rendering of its own family and none
  // recognises what the others write (order is not what decides).
  const std::vector<std::pair<std::string, std::string>> renderings = {
      {"hermes",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\"}}\n</tool_call>"},
      {"qwen3_coder",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
       "</tool_call>"},
      {"llama3_json", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
      {"harmony",
       " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": "
       "\"Paris\"}<|call|>"},
  };
  for (const auto& [name, rendering] : renderings) {
    for (const auto& format : tool_call_formats()) {
      EXPECT_EQ(format->renders(rendering), format->name() == name)
          << format->name() << " on " << name << "'s rendering";
    }
  }
}

TEST(ToolCallDetection, TemplatesOfUnsupportedFormatsGetNone) {
  // Phi-4-mini writes <|tool_call|>{json}<|/tool_call|>, which no format reads yet.
  EXPECT_EQ(detected("llama-cpp-microsoft-Phi-4-mini-instruct.jinja"), "none");
}

TEST(ToolCallDetection, EveryFormatIsListedOnceByName) {
  auto names = tool_call_format_names();
  EXPECT_EQ(names.size(), 10u);
  for (const auto& name : names) EXPECT_EQ(tool_call_format(name).name(), name);
  EXPECT_THROW(tool_call_format("no-such-format"), Error);
}

}  // namespace
}  // namespace mlx_cpp::chat
