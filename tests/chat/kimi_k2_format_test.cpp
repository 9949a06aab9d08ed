// Checked against mlx-lm's kimi_k2 parser (ids, names and arguments agree):
// the single call, the two calls with spaces around the markers, the call
// whose opening marker is missing, and the name holding a ':'. mlx-lm reads
// a truncated call as garbage (the markers end up in its name); here the
// call keeps its arguments as written, as every format here does.
#include <fstream>
#include <sstream>

#include "chat/tool_call_detection.h"
#include "chat/tool_call_format.h"
#include "format_check.h"
#include "template_probe.h"

namespace mlx_cpp::chat {
namespace {

using testing::parse_checked;
using testing::probe_rendering;

const ToolCallFormat& kimi() {
  return tool_call_format("kimi_k2");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

TEST(KimiK2Format, SingleCallKeepsTheModelsId) {
  auto message = parse_checked(kimi(),
                               "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_"
                               "weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_"
                               "call_end|><|tool_calls_section_end|>",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(KimiK2Format, SeveralCallsWithTextAroundAndSpaces) {
  auto message = parse_checked(
      kimi(),
      "Let me look.\n<|tool_calls_section_begin|>\n<|tool_call_begin|> functions.get_weather:0 "
      "<|tool_call_argument_begin|> {\"city\": \"Paris\"} <|tool_call_end|>\n<|tool_call_begin|>"
      "functions.search:1<|tool_call_argument_begin|>{\"q\": \"a}b\", \"n\": [1, 2]}<|tool_call_"
      "end|>\n<|tool_calls_section_end|>\nDone.",
      kTools);
  EXPECT_EQ(message.content, "Let me look.Done.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(message.calls[1].id, "functions.search:1");
  EXPECT_EQ(message.calls[1].name, "search");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": \"a}b\", \"n\": [1, 2]}");
}

TEST(KimiK2Format, NamesBetweenPrefixAndLastColon) {
  auto message = parse_checked(kimi(),
                               "<|tool_calls_section_begin|>functions.ns:tool:3<|tool_call_"
                               "argument_begin|>{}<|tool_call_end|><|tool_call_begin|>search<|"
                               "tool_call_argument_begin|><|tool_call_end|><|tool_calls_section_"
                               "end|>",
                               kTools);
  ASSERT_EQ(message.calls.size(), 2u);
  // The first call's own opening marker is missing; inside a section the
  // id starts right away.
  EXPECT_EQ(message.calls[0].id, "functions.ns:tool:3");
  EXPECT_EQ(message.calls[0].name, "ns:tool");
  EXPECT_EQ(message.calls[0].arguments, "{}");
  // An id without prefix or index is the name; empty arguments are {}.
  EXPECT_EQ(message.calls[1].id, "search");
  EXPECT_EQ(message.calls[1].name, "search");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(KimiK2Format, TruncatedCallKeepsItsArgumentsAsWritten) {
  auto message = parse_checked(kimi(),
                               "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:"
                               "0<|tool_call_argument_begin|>{\"q\": \"unfini",
                               kTools);
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"unfini");

  // Cut before its arguments: a call with none yet.
  auto bare = parse_checked(
      kimi(), "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>", kTools);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].arguments, "");
}

TEST(KimiK2Format, ArgumentsThatAreNotJsonAreKeptAsWritten) {
  auto message = parse_checked(kimi(),
                               "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
                               "  q=mlx  <|tool_call_end|>",
                               kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "q=mlx");
}

TEST(KimiK2Format, MalformedCallsStayContent) {
  for (const std::string text :
       {"<|tool_calls_section_begin|>I will not call anything.",
        "<|tool_call_begin|>functions.search:0 oops<|tool_call_argument_begin|>{}",
        "<|tool_call_begin|><|tool_call_argument_begin|>{}<|tool_call_end|>",
        "<|tool_call_begin|>functions.:0<|tool_call_argument_begin|>{}<|tool_call_end|>",
        "text <|tool_calls_sect", "functions.search:0<|tool_call_argument_begin|>{}"}) {
    auto message = parse_checked(kimi(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

TEST(KimiK2Format, PartialMarkerAfterACallIsContent) {
  auto message = parse_checked(kimi(),
                               "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
                               "{}<|tool_call_end|> <|tool_calls_sec",
                               kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.content, "<|tool_calls_sec");
}

TEST(KimiK2Format, RendersItsTemplatesCallsOnly) {
  const std::string rendered = probe_rendering("moonshotai-Kimi-K2-Thinking.jinja");
  ASSERT_NE(rendered.find("<|tool_calls_section_begin|>"), std::string::npos) << rendered;
  EXPECT_TRUE(kimi().renders(rendered));
  EXPECT_EQ(detect_tool_call_format(rendered, "")->name(), "kimi_k2");
  EXPECT_FALSE(
      kimi().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                     "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(kimi().renders("<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>"));
  EXPECT_FALSE(kimi().renders(
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": "
      "\"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"));
}

}  // namespace
}  // namespace mlx_cpp::chat
