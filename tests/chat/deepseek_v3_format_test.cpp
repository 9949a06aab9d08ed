// mlx-lm has no parser for these formats; the cases follow what the R1,
// V3.1 and V3.2 templates write (rendered below) and how vLLM's and
// llama.cpp's DeepSeek parsers read them.
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::parse_checked;
using testing::read_test_template;

const ToolCallFormat& deepseek() {
  return tool_call_format("deepseek_v3");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

// What a template writes for the probe call. The R1 and V3.1 templates
// join the arguments to their markup as a string, so they refuse the probe
// (whose arguments are an object); they are given the arguments as JSON text.
std::string rendered_call(const std::string& template_file, bool arguments_as_text) {
  const ChatTemplate chat_template(read_test_template(template_file));
  nlohmann::ordered_json context = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  if (!arguments_as_text) return render_probe_call(chat_template, context);
  auto messages = probe_messages();
  messages[1]["tool_calls"][0]["function"]["arguments"] = "{\"city\": \"Paris\"}";
  context["tools"] = probe_tools();
  context["messages"] = messages;
  return chat_template.render(context);
}

TEST(DeepSeekV3Format, R1CallInAJsonFence) {
  auto message = parse_checked(deepseek(),
                               "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                               "get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>"
                               "<｜tool▁calls▁end｜>",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(DeepSeekV3Format, SeveralR1CallsWithTextAround) {
  auto message = parse_checked(
      deepseek(),
      "Checking both.\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n"
      "```json\n{\"q\": "
      "\"a```b\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep"
      "｜>get_weather\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>\nDone.",
      kTools);
  EXPECT_EQ(message.content, "Checking both.Done.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a```b\"}");
  EXPECT_EQ(message.calls[1].name, "get_weather");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(DeepSeekV3Format, V31CallsWithoutTypeOrFence) {
  auto message =
      parse_checked(deepseek(),
                    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
                    "{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>search<"
                    "｜tool▁sep｜>  {\"q\": [1, {\"x\": null}]}  <｜tool▁call▁end｜><｜"
                    "tool▁calls▁end｜>",
                    kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(message.calls[1].name, "search");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": [1, {\"x\": null}]}");
}

TEST(DeepSeekV3Format, ExtraWhitespaceAndAFenceWithoutTag) {
  auto message =
      parse_checked(deepseek(),
                    "<｜tool▁calls▁begin｜>\n<｜tool▁call▁begin｜> function <｜tool▁sep｜>"
                    " search \n```\n{\"q\": \"x\"}\n```\n<｜tool▁call▁end｜>\n<｜tool▁"
                    "calls▁end｜>",
                    kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");
}

TEST(DeepSeekV3Format, NameInTheTypesPlaceBeforeAFence) {
  auto message = parse_checked(deepseek(),
                               "<｜tool▁call▁begin｜>search<｜tool▁sep｜>\n```json\n{\"q\": 1}\n```"
                               "<｜tool▁call▁end｜>",
                               kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": 1}");
}

TEST(DeepSeekV3Format, V32DsmlParametersAndJsonValues) {
  auto message = parse_checked(
      deepseek(),
      "Let me see.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜"
      "parameter name=\"city\" string=\"true\">Paris "
      "\"15e\"</｜DSML｜parameter>\n<｜DSML｜parameter "
      "name=\"days\" string=\"false\">3</｜DSML｜parameter>\n<｜DSML｜parameter name=\"opts\" "
      "string=\"false\">{\"unit\": \"C\"}</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke "
      "name=\"search\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>\nAfter.",
      kTools);
  EXPECT_EQ(message.content, "Let me see.After.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments,
            "{\"city\": \"Paris \\\"15e\\\"\", \"days\": 3, \"opts\": {\"unit\": \"C\"}}");
  EXPECT_EQ(message.calls[1].name, "search");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(DeepSeekV3Format, V32InvokeHoldingJsonAndValuesThatAreNotJson) {
  auto message = parse_checked(deepseek(),
                               "<｜DSML｜invoke name=\"search\">{\"q\": \"x\"}</｜DSML｜invoke>"
                               "<｜DSML｜invoke name=\"search\"><｜DSML｜parameter name=\"n\" "
                               "string=\"false\">many</｜DSML｜parameter></｜DSML｜invoke>",
                               kTools);
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");
  EXPECT_EQ(message.calls[1].arguments, "{\"n\": \"many\"}");
}

TEST(DeepSeekV3Format, TruncatedCallsKeepWhatWasWritten) {
  auto r1 =
      parse_checked(deepseek(),
                    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n"
                    "```json\n{\"q\": \"unfini",
                    kTools);
  EXPECT_EQ(r1.content, "");
  ASSERT_EQ(r1.calls.size(), 1u);
  EXPECT_EQ(r1.calls[0].arguments, "{\"q\": \"unfini");

  auto v31 = parse_checked(
      deepseek(), "<｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"q\": \"x\"}\n<｜tool▁call", kTools);
  ASSERT_EQ(v31.calls.size(), 1u);
  EXPECT_EQ(v31.calls[0].arguments, "{\"q\": \"x\"}");

  auto dsml = parse_checked(deepseek(),
                            "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜"
                            "DSML｜parameter name=\"city\" string=\"true\">Par",
                            kTools);
  ASSERT_EQ(dsml.calls.size(), 1u);
  EXPECT_EQ(dsml.calls[0].arguments, "{\"city\": \"Par\"}");
  EXPECT_EQ(dsml.content, "");
}

TEST(DeepSeekV3Format, MalformedCallsStayContent) {
  for (const std::string text : {
           "<｜tool▁calls▁begin｜>no call here",
           "<｜tool▁call▁begin｜>get weather<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
           "<｜tool▁call▁begin｜><｜tool▁sep｜>{}<｜tool▁call▁end｜>",
           "<｜tool▁call▁begin｜>function<｜tool▁sep｜>```json\n{}\n```<｜tool▁call▁end｜>",
           "<｜DSML｜invoke>no name</｜DSML｜invoke>",
           "<｜DSML｜invoke name=get_weather></｜DSML｜invoke>",
           "text <｜tool▁calls▁be",
           "text <｜DSML｜func",
       }) {
    auto message = parse_checked(deepseek(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(DeepSeekV3Format, JunkInsideAnInvokeEndsTheCall) {
  auto message = parse_checked(deepseek(),
                               "<｜DSML｜invoke name=\"search\">\n<｜DSML｜parameter name=\"q\" "
                               "string=\"true\">x</｜DSML｜parameter>\noops",
                               kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");
  EXPECT_EQ(message.content, "oops");
}

TEST(DeepSeekV3Format, RendersItsTemplatesCallsOnly) {
  const std::string r1 = rendered_call("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", true);
  ASSERT_NE(r1.find("<｜tool▁sep｜>get_weather\n```json"), std::string::npos) << r1;
  const std::string v31 = rendered_call("deepseek-ai-DeepSeek-V3.1.jinja", true);
  ASSERT_NE(v31.find("<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"), std::string::npos) << v31;
  const std::string v32 = rendered_call("DeepSeek-V3.2.jinja", false);
  ASSERT_NE(v32.find("<｜DSML｜invoke name=\"get_weather\">"), std::string::npos) << v32;
  for (const auto& rendered : {r1, v31, v32}) {
    EXPECT_TRUE(deepseek().renders(rendered)) << rendered;
    EXPECT_EQ(detect_tool_call_format(rendered, "")->name(), "deepseek_v3");
  }
  // Where the probe is refused, detection reads the template's source.
  EXPECT_TRUE(
      deepseek().renders(read_test_template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja")));
  EXPECT_TRUE(deepseek().renders(read_test_template("deepseek-ai-DeepSeek-V3.1.jinja")));

  EXPECT_FALSE(
      deepseek().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                         "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(
      deepseek().renders("<|tool_calls_section_begin|><|tool_call_begin|>abcDEF123<|tool_call_"
                         "argument_begin|>{\"city\":"
                         " \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"));
  EXPECT_FALSE(
      deepseek().renders("<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>"));
  EXPECT_FALSE(deepseek().renders(
      "<｜GCML｜tool_calls>\n<｜GCML｜invoke name=\"get_weather\">\n</｜GCML｜invoke>\n</｜GCML｜"
      "tool_calls>"));
}

}  // namespace
}  // namespace mlx_cpp::chat
