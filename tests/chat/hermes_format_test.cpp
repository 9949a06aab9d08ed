#include "chat/tool_call_format.h"
#include "format_check.h"

namespace mlx_cpp::chat {
namespace {

using testing::parse_checked;

const ToolCallFormat& hermes() {
  return tool_call_format("hermes");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

TEST(HermesFormat, TaggedCallWithTextBefore) {
  auto message = parse_checked(
      hermes(),
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>",
      kTools);
  EXPECT_EQ(message.content, "Let me check.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(HermesFormat, SeveralCallsAndTextAfter) {
  auto message = parse_checked(hermes(),
                               "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": "
                               "\"a}b\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                               "\"arguments\": {}}\n</tool_call>\nDone.",
                               kTools);
  EXPECT_EQ(message.content, "Done.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a}b\"}");
  EXPECT_EQ(message.calls[1].name, "get_weather");
  EXPECT_EQ(message.calls[1].arguments, "{}");
}

TEST(HermesFormat, MissingClosingTagAtTheEnd) {
  auto message = parse_checked(
      hermes(), "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"x\"}");
  EXPECT_EQ(message.content, "");
}

TEST(HermesFormat, ArgumentsBeforeNameAndAsAString) {
  auto message = parse_checked(hermes(),
                               "<tool_call>{\"arguments\": {\"q\": 1}, \"name\": \"search\"}"
                               "</tool_call><tool_call>{\"name\": \"search\", \"arguments\": "
                               "\"{\\\"q\\\": 2}\"}</tool_call>",
                               kTools);
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": 1}");
  EXPECT_EQ(message.calls[1].arguments, "{\"q\": 2}");
}

TEST(HermesFormat, BareFencedAndDoubledBraceCallsOfOfferedTools) {
  auto bare = parse_checked(
      hermes(), "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}", kTools);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].arguments, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(bare.content, "");

  auto fenced = parse_checked(hermes(),
                              "I will search.\n```json\n{\"name\": \"search\", \"arguments\": "
                              "{\"q\": \"mlx\"}}\n```\n",
                              kTools);
  EXPECT_EQ(fenced.content, "I will search.");
  ASSERT_EQ(fenced.calls.size(), 1u);
  EXPECT_EQ(fenced.calls[0].arguments, "{\"q\": \"mlx\"}");

  auto doubled =
      parse_checked(hermes(), "{{\"name\": \"search\", \"arguments\": {\"q\": \"y\"}}}", kTools);
  ASSERT_EQ(doubled.calls.size(), 1u);
  EXPECT_EQ(doubled.calls[0].arguments, "{\"q\": \"y\"}");
  EXPECT_EQ(doubled.content, "");
}

TEST(HermesFormat, JsonThatCallsNoOfferedToolStaysContent) {
  const std::string text =
      "Example:\n{\"name\": \"rm_rf\", \"arguments\": {}}\nand ```json\n{\"a\": 1}\n``` end";
  auto message = parse_checked(hermes(), text, kTools);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.content, text);
}

TEST(HermesFormat, MalformedCallsStayContent) {
  for (const std::string text :
       {"<tool_call>{\"name\": }</tool_call> after", "<tool_call>not json</tool_call>",
        "<tool_call>{\"arguments\": {}}</tool_call>", "text <tool_ca"}) {
    auto message = parse_checked(hermes(), text, kTools);
    EXPECT_TRUE(message.calls.empty()) << text;
    EXPECT_EQ(message.content, text);
  }
}

// Arguments that stop being JSON midway (found by fuzz_tool_calls): a
// stream shows the call once its name is known, so the whole text is the
// same call, its arguments as written.
TEST(HermesFormat, ArgumentsThatStopBeingJsonAreKeptAsWritten) {
  auto message = parse_checked(
      hermes(),
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\"x\":is\", \"n\": 2}}\n</x>",
      kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\"x\":is\", \"n\": 2}");
}

// A byte that cannot be JSON (a raw control character in a string) ends
// the arguments where it stands; what follows is content again.
TEST(HermesFormat, ArgumentsBrokenByAControlByteEndThere) {
  auto message = parse_checked(
      hermes(), "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a\x01b\"}}", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"a");
  EXPECT_EQ(message.content, "\x01b\"}}");
}

TEST(HermesFormat, TruncatedArgumentsAreKeptAsWritten) {
  auto message = parse_checked(
      hermes(), "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"unfini", kTools);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"unfini");
}

TEST(HermesFormat, CodeWithBracesIsContent) {
  const std::string text = "int main()\n{\n  return 0;\n}\n";
  auto message = parse_checked(hermes(), text, kTools);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.content, text);
}

TEST(HermesFormat, OneCallWhenParallelCallsAreOff) {
  ToolContext context;
  context.tools = testing::tools_named(kTools);
  auto message = testing::parse_checked(hermes(),
                                        "<tool_call>{\"name\": \"search\", \"arguments\": {}}"
                                        "</tool_call><tool_call>{\"name\": \"search\", "
                                        "\"arguments\": {\"q\": 1}}</tool_call>",
                                        context, /*max_calls=*/1);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{}");
}

}  // namespace
}  // namespace mlx_cpp::chat
