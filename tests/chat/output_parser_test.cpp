// The whole answer parser: the think-tag splitter, then the tool-call
// format on what follows the block. As with the formats alone, every answer
// is also streamed in every split, and must parse the same; and the message
// the parser keeps must be what its deltas add up to.
#include "chat/output_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/tool_call_format.h"
#include "format_check.h"

namespace mlx_cpp::chat {
namespace {

using testing::Message;

const ToolCallFormat& hermes() {
  return tool_call_format("hermes");
}
const ToolCallFormat& harmony() {
  return tool_call_format("harmony");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

OutputFormat hermes_with_think() {
  return OutputFormat{&hermes(), true, {"<think>", "</think>"}};
}

OutputOptions with_tools(int max_calls = 0) {
  OutputOptions options;
  options.parse_tool_calls = true;
  options.tools.tools = testing::tools_named(kTools);
  options.max_calls = max_calls;
  return options;
}

// Feeds `pieces` in turn, then finishes; the parser's own message must be
// the deltas added up, ids included.
Message parse_pieces(const OutputFormat& format, const OutputOptions& options,
                     const std::vector<std::string>& pieces) {
  OutputParser parser(format, options);
  Message message;
  for (const auto& piece : pieces) testing::add_delta(message, parser.feed(piece));
  testing::add_delta(message, parser.finish());
  const ParsedMessage& kept = parser.message();
  EXPECT_EQ(kept.content, message.content);
  EXPECT_EQ(kept.reasoning, message.reasoning);
  EXPECT_EQ(kept.tool_calls.size(), message.calls.size());
  for (size_t i = 0; i < std::min(kept.tool_calls.size(), message.calls.size()); ++i) {
    EXPECT_EQ(kept.tool_calls[i].id, message.calls[i].id);
    EXPECT_EQ(kept.tool_calls[i].name, message.calls[i].name);
    EXPECT_EQ(kept.tool_calls[i].arguments, message.calls[i].arguments);
  }
  return message;
}

// The message `text` parses to, after checking every streamed split.
Message parse_checked(const OutputFormat& format, const OutputOptions& options,
                      const std::string& text) {
  const Message whole = parse_pieces(format, options, {text});
  for (size_t at = 1; at < text.size(); ++at) {
    auto parts = parse_pieces(format, options, {text.substr(0, at), text.substr(at)});
    EXPECT_TRUE(testing::same_message(parts, whole))
        << "split at byte " << at << ": " << testing::describe(parts)
        << "\n whole: " << testing::describe(whole);
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  auto streamed = parse_pieces(format, options, bytes);
  EXPECT_TRUE(testing::same_message(streamed, whole))
      << "byte by byte: " << testing::describe(streamed)
      << "\n whole: " << testing::describe(whole);
  return whole;
}

const std::string kCall =
    "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"mlx\"}}\n</tool_call>";

TEST(OutputParser, ReasoningThenCall) {
  auto message = parse_checked(hermes_with_think(), with_tools(),
                               "<think>\nI should search.\n</think>\n\n" + kCall);
  EXPECT_EQ(message.reasoning, "I should search.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
  EXPECT_EQ(message.calls[0].arguments, "{\"q\": \"mlx\"}");
  EXPECT_FALSE(message.calls[0].id.empty());
}

TEST(OutputParser, ReasoningOpenedByThePrompt) {
  OutputOptions options = with_tools();
  options.starts_in_reasoning = true;
  auto message =
      parse_checked(hermes_with_think(), options, "I should search.\n</think>\n\nOk.\n" + kCall);
  EXPECT_EQ(message.reasoning, "I should search.");
  EXPECT_EQ(message.content, "Ok.");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");
}

TEST(OutputParser, CallInsideTheThinkBlockIsReasoning) {
  // The model drafting a call while it thinks has not made it.
  auto message = parse_checked(hermes_with_think(), with_tools(),
                               "<think>\nMaybe " + kCall + "\n</think>\n\nNo search needed.");
  EXPECT_EQ(message.reasoning, "Maybe " + kCall);
  EXPECT_EQ(message.content, "No search needed.");
  EXPECT_TRUE(message.calls.empty());
}

TEST(OutputParser, MarkupIsContentWhenNoToolsWereOffered) {
  auto message =
      parse_checked(hermes_with_think(), OutputOptions{}, "<think>\nplan\n</think>\n\n" + kCall);
  EXPECT_EQ(message.reasoning, "plan");
  EXPECT_EQ(message.content, kCall);
  EXPECT_TRUE(message.calls.empty());
}

TEST(OutputParser, ThinkBlockStaysInContentWhenReasoningIsNotParsed) {
  OutputOptions options;
  options.parse_reasoning = false;
  const std::string text = "<think>\nplan\n</think>\n\nanswer";
  auto message = parse_checked(hermes_with_think(), options, text);
  EXPECT_EQ(message.reasoning, "");
  EXPECT_EQ(message.content, text);

  // Even where the prompt opened the block.
  options.starts_in_reasoning = true;
  auto opened = parse_checked(hermes_with_think(), options, "plan</think>answer");
  EXPECT_EQ(opened.reasoning, "");
  EXPECT_EQ(opened.content, "plan</think>answer");
}

TEST(OutputParser, NoThinkTags) {
  // A model without think tags: the format alone.
  const OutputFormat format{&hermes(), {}};
  auto message = parse_checked(format, with_tools(), "<think>x</think>Let me look.\n" + kCall);
  EXPECT_EQ(message.reasoning, "");
  EXPECT_EQ(message.content, "<think>x</think>Let me look.");
  ASSERT_EQ(message.calls.size(), 1u);

  // And no format at all.
  const std::string text = "plain " + kCall;
  auto plain = parse_checked(OutputFormat{}, with_tools(), text);
  EXPECT_EQ(plain.content, text);
  EXPECT_TRUE(plain.calls.empty());
}

TEST(OutputParser, OneCallWhenParallelCallsAreOff) {
  auto message =
      parse_checked(hermes_with_think(), with_tools(/*max_calls=*/1),
                    "<think>two searches</think>" + kCall +
                        "\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(message.reasoning, "two searches");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "search");

  auto both =
      parse_checked(hermes_with_think(), with_tools(),
                    "<think>two searches</think>" + kCall +
                        "\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>");
  ASSERT_EQ(both.calls.size(), 2u);
  EXPECT_EQ(both.calls[1].name, "get_weather");
  EXPECT_NE(both.calls[0].id, both.calls[1].id);
}

TEST(OutputParser, UnclosedThinkBlockIsAllReasoning) {
  auto message =
      parse_checked(hermes_with_think(), with_tools(), "<think>\nthinking " + kCall + " and");
  EXPECT_EQ(message.reasoning, "thinking " + kCall + " and");
  EXPECT_EQ(message.content, "");
  EXPECT_TRUE(message.calls.empty());
}

const std::string kHarmonyAnswer =
    "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>"
    "answer";

TEST(OutputParser, HarmonyFindsReasoningWithoutTools) {
  // Harmony's channels are its think tags, so it runs though no tools were offered.
  const OutputFormat format{&harmony(), {}};
  auto message = parse_checked(format, OutputOptions{}, kHarmonyAnswer);
  EXPECT_EQ(message.reasoning, "think");
  EXPECT_EQ(message.content, "answer");
  EXPECT_TRUE(message.calls.empty());

  auto tools = parse_checked(format, with_tools(), kHarmonyAnswer + "<|return|>");
  EXPECT_EQ(tools.reasoning, "think");
  EXPECT_EQ(tools.content, "answer");
}

TEST(OutputParser, HarmonyCall) {
  const OutputFormat format{&harmony(), {}};
  auto message = parse_checked(
      format, with_tools(),
      "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
  EXPECT_EQ(message.reasoning, "Weather.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\":\"Paris\"}");
}

TEST(OutputParser, HarmonyCallsAreDroppedWhenNoToolsWereOffered) {
  // Harmony names the function in its header, so it would make a call of
  // any name; a request without tools (or with tool_choice none) gets none.
  auto message = parse_checked(
      OutputFormat{&harmony(), true, {}}, OutputOptions{},
      "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
  EXPECT_EQ(message.reasoning, "Weather.");
  EXPECT_EQ(message.content, "");
  EXPECT_TRUE(message.calls.empty());
}

TEST(OutputParser, HarmonyAsWrittenWhenReasoningIsNotParsed) {
  // With neither reasoning nor tools asked for, nothing reads the channels.
  OutputOptions options;
  options.parse_reasoning = false;
  auto message = parse_checked(OutputFormat{&harmony(), true, {}}, options, kHarmonyAnswer);
  EXPECT_EQ(message.reasoning, "");
  EXPECT_EQ(message.content, kHarmonyAnswer);
}

}  // namespace
}  // namespace mlx_cpp::chat
