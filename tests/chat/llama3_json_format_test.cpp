// mlx-lm has no parser for this format (its Llama 3 models fall back to
// json_tools, which wants <tool_call> tags), so these cases follow the
// format as Meta documents it and as vLLM's and llama.cpp's parsers read it.
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

const ToolCallFormat& llama3() {
  return tool_call_format("llama3_json");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

TEST(Llama3JsonFormat, SingleCallIsTheWholeAnswer) {
  auto message = parse_checked(
      llama3(), "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(Llama3JsonFormat, PythonTagNeverReachesContent) {
  auto message = parse_checked(
      llama3(), "<|python_tag|>{\"name\": \"search\", \"arguments\": {\"q\": \"mlx\"}}", kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"mlx\"}");
}

TEST(Llama3JsonFormat, SeveralCallsBySemicolonNewlineOrTag) {
  for (const std::string text :
       {"{\"name\": \"search\", \"parameters\": {\"q\": \"a;b\"}}; {\"name\": \"get_weather\", "
        "\"parameters\": {}}",
        "{\"name\": \"search\", \"parameters\": {\"q\": \"a;b\"}}\n{\"name\": \"get_weather\", "
        "\"parameters\": {}}\n",
        "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"a;b\"}};<|python_tag|>"
        "{\"name\": \"get_weather\", \"parameters\": {}};"}) {
    auto message = parse_checked(llama3(), text, kTools);
    EXPECT_EQ(message.content, "") << text;
    ASSERT_EQ(message.calls.size(), 2u) << text;
    EXPECT_EQ(message.calls[0].name, "search");
    EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a;b\"}");
    EXPECT_EQ(message.calls[1].name, "get_weather");
    EXPECT_EQ(message.calls[1].arguments, "{}");
  }
}

TEST(Llama3JsonFormat, TextBeforeTheTagAndAfterTheCalls) {
  auto message = parse_checked(llama3(),
                               "Let me look.\n<|python_tag|>{\"name\": \"search\", \"parameters\": "
                               "{\"q\": 1}}\nI asked the search tool.",
                               kTools);
  EXPECT_EQ(message.content, "Let me look.I asked the search tool.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": 1}");

  // A call followed by JSON that is no call: the JSON is content.
  auto trailing = parse_checked(
      llama3(), "{\"name\": \"search\", \"parameters\": {}}\n{\"note\": \"done\"}", kTools);
  ASSERT_EQ(trailing.calls.size(), 1u);
  EXPECT_EQ(trailing.content, "{\"note\": \"done\"}");
}

TEST(Llama3JsonFormat, JsonAfterProseIsContent) {
  // Only the start of the answer (or the tag) begins a call.
  const std::string text =
      "Here is how a call looks:\n{\"name\": \"search\", \"parameters\": {\"q\": 1}}";
  auto message = parse_checked(llama3(), text, kTools);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.content, text);
}

TEST(Llama3JsonFormat, MalformedCallsAndJsonAnswersStayContent) {
  for (const std::string text : {"{\"name\": }", "{\"name\": \"search\"}", "{\"answer\": 42}",
                                 "{\"name\": \"Bob\", \"age\": 3}", "<|python_tag|>print(\"hi\")",
                                 "<|python_tag|>", "{\"name\": \"sea", "{not json} tail"}) {
    auto message = parse_checked(llama3(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(Llama3JsonFormat, TruncatedArgumentsAreKeptAsWritten) {
  auto message =
      parse_checked(llama3(), "{\"name\": \"search\", \"parameters\": {\"q\": \"unfini", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"unfini");
  EXPECT_EQ(message.content, "");
  EXPECT_TRUE(
      calls_close_at_end(llama3(), "{\"name\": \"search\", \"parameters\": {\"q\": \"unfini"));
}

TEST(Llama3JsonFormat, PartialTagAtTheEndIsContent) {
  auto message = parse_checked(llama3(), "Checking <|python_t", kTools);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.content, "Checking <|python_t");
}

TEST(Llama3JsonFormat, ExtraWhitespaceTypeKeyAndStringArguments) {
  auto message = parse_checked(llama3(),
                               "\n\n  {\"type\": \"function\", \"name\" : \"search\" ,\n "
                               "\"parameters\" : { \"q\" : 1 } }  \n ;\n <|python_tag|> "
                               "{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": "
                               "\\\"Oslo\\\"}\"}\n\n",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{ \"q\" : 1 }");
  EXPECT_EQ(message.calls[1].arguments, "{\"city\": \"Oslo\"}");
}

TEST(Llama3JsonFormat, RendersLlama3TemplatesOnly) {
  // What meta-llama/Llama-3.1-8B-Instruct's (and 3.2's, 3.3's) template
  // writes for the probe call.
  EXPECT_TRUE(llama3().renders(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"));
  EXPECT_TRUE(llama3().renders(
      "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"));
  EXPECT_FALSE(
      llama3().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\"}}\n</tool_call>"));
  for (const char* other :
       {"nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja",
        "mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja",
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "GigaChat3-10B-A1.8B.jinja",
        "llama-cpp-microsoft-Phi-4-mini-instruct.jinja"}) {
    const std::string rendered = probe_rendering(other);
    ASSERT_FALSE(rendered.empty()) << other;
    EXPECT_FALSE(llama3().renders(rendered)) << other;
  }
}

TEST(Llama3JsonFormat, MarksThePythonTag) {
  EXPECT_EQ(llama3().marker_tokens(), std::vector<std::string>{"<|python_tag|>"});
}

}  // namespace
}  // namespace mlx_cpp::chat
