// mlx-lm has no parser for Cohere's formats, so these cases follow what
// Command R7B's template (tests render it) and Command R / R+'s tool-use
// prompt ask the model to write.
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::calls_close_at_end;
using testing::parse_checked;
using testing::probe_rendering;

const ToolCallFormat& command_r() {
  return tool_call_format("command_r");
}
const std::vector<std::string> kTools = {"get_weather", "search"};
const char* kR7bTemplate = "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja";

TEST(CommandRFormat, R7bPlanThenOneCall) {
  auto message = parse_checked(command_r(),
                               "<|START_THINKING|>I will look up the weather in Paris."
                               "<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
                               "\"tool_name\": \"get_weather\", \"parameters\": {\"city\": "
                               "\"Paris\"}}\n]<|END_ACTION|>",
                               kTools);
  EXPECT_EQ(message.reasoning, "I will look up the weather in Paris.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_NE(message.calls[0].id, "0");
}

TEST(CommandRFormat, R7bSeveralCallsInOneAction) {
  auto message = parse_checked(command_r(),
                               "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": "
                               "\"search\", \"parameters\": {\"q\": \"a]b\"}},\n    "
                               "{\"tool_call_id\": \"1\", \"tool_name\": \"get_weather\", "
                               "\"parameters\": {}}\n]<|END_ACTION|>",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a]b\"}");
  EXPECT_EQ(message.calls[1].name, "get_weather");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(CommandRFormat, R7bResponseMarkersAreDropped) {
  auto message = parse_checked(command_r(),
                               "<|START_THINKING|>No tool is needed.<|END_THINKING|>"
                               "<|START_RESPONSE|>It is 4.<|END_RESPONSE|>",
                               kTools);
  EXPECT_EQ(message.reasoning, "No tool is needed.");
  EXPECT_EQ(message.content, "It is 4.");
  EXPECT_TRUE(message.calls.empty());
}

TEST(CommandRFormat, OlderCommandRActionBlockWithTextBeforeAndAfter) {
  auto message = parse_checked(command_r(),
                               "Plan: first I will search.\nAction: ```json\n[\n    {\n        "
                               "\"tool_name\": \"search\",\n        \"parameters\": {\"q\": "
                               "\"mlx\"}\n    }\n]\n```\nThat is all.",
                               kTools);
  EXPECT_EQ(message.content, "Plan: first I will search.That is all.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"mlx\"}");
}

TEST(CommandRFormat, TextBeforeAndAfterAnR7bAction) {
  auto message = parse_checked(command_r(),
                               "Let me check.\n<|START_ACTION|>[{\"tool_name\": \"search\", "
                               "\"parameters\": {\"q\": 1}}]<|END_ACTION|>\nDone.",
                               kTools);
  EXPECT_EQ(message.content, "Let me check.Done.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": 1}");
}

TEST(CommandRFormat, MalformedCallsStayContent) {
  for (const std::string text :
       {"<|START_ACTION|>not json<|END_ACTION|>",
        "<|START_ACTION|>[{\"name\": \"search\", \"arguments\": {}}]<|END_ACTION|>",
        "<|START_ACTION|>[{\"tool_name\": }]", "<|START_ACTION|>", "Action: I will search.",
        "The next Action: ```json\n[{\"tool_name\": \"search\", \"parameters\": {}}]\n```",
        "Action: ```python\nprint(1)\n```"}) {
    auto message = parse_checked(command_r(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(CommandRFormat, TruncatedCallsAndPlansAreKeptAsWritten) {
  auto call = parse_checked(command_r(),
                            "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": "
                            "\"search\", \"parameters\": {\"q\": \"unfini",
                            kTools);
  ASSERT_EQ(call.calls.size(), 1u);
  EXPECT_EQ(call.calls[0].arguments, "{\"q\": \"unfini");
  EXPECT_EQ(call.content, "");
  EXPECT_TRUE(calls_close_at_end(
      command_r(), "<|START_ACTION|>[{\"tool_name\": \"search\", \"parameters\": {\"q\": 1"));

  auto plan = parse_checked(command_r(), "<|START_THINKING|>I will first <|END_THIN", kTools);
  EXPECT_EQ(plan.reasoning, "I will first <|END_THIN");
  EXPECT_EQ(plan.content, "");
}

TEST(CommandRFormat, PartialMarkersAtTheEndAreContent) {
  for (const std::string text : {"Hello <|START_ACT", "Hello\nActi", "Fine.<|END_RESP"}) {
    auto message = parse_checked(command_r(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(CommandRFormat, ExtraWhitespace) {
  auto message = parse_checked(command_r(),
                               "\n<|START_THINKING|>\n  Plan it.  \n<|END_THINKING|>\n\n"
                               "<|START_ACTION|>  [ \n{ \"tool_name\" : \"search\" , "
                               "\"parameters\" : { \"q\" : 2 } } ,\n ]  \n<|END_ACTION|>  \n",
                               kTools);
  EXPECT_EQ(message.reasoning, "Plan it.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{ \"q\" : 2 }");
}

TEST(CommandRFormat, RendersCommandTemplatesOnly) {
  const std::string rendered = probe_rendering(kR7bTemplate);
  EXPECT_NE(rendered.find("<|START_ACTION|>"), std::string::npos) << rendered;
  EXPECT_TRUE(command_r().renders(rendered));
  // What Command R / R+'s tool-use template writes.
  EXPECT_TRUE(command_r().renders(
      "Action: ```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        "
      "\"parameters\": {\"city\": \"Paris\"}\n    }\n]\n```<|END_OF_TURN_TOKEN|>"));
  EXPECT_FALSE(
      command_r().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                          "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(command_r().renders(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"));
  EXPECT_FALSE(
      command_r().renders(probe_rendering("mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja")));
  // Nor does any other family claim R7B's rendering before this format.
  EXPECT_FALSE(tool_call_format("hermes").renders(rendered));
  EXPECT_FALSE(tool_call_format("mistral").renders(rendered));
  EXPECT_FALSE(tool_call_format("llama3_json").renders(rendered));
}

TEST(CommandRFormat, MarkersAndReasoning) {
  EXPECT_EQ(command_r().marker_tokens().size(), 6u);
  EXPECT_TRUE(command_r().parses_reasoning());
}

}  // namespace
}  // namespace mlx_cpp::chat
