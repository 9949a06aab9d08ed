// mlx-lm has no parser for harmony (it runs gpt-oss but leaves its output
// as written), so there is nothing of it to check these cases against; they
// follow gpt-oss's chat template and the harmony format's description.
#include <algorithm>

#include "chat/tool_call_format.h"
#include "format_check.h"

namespace mlx_cpp::chat {
namespace {

using testing::Message;
using testing::parse_checked;

const ToolCallFormat& harmony() {
  return tool_call_format("harmony");
}
const std::vector<std::string> kTools = {"get_weather", "search"};

Message parse(const std::string& text) {
  return parse_checked(harmony(), text, kTools);
}

TEST(HarmonyFormat, ReasoningThenFinalAnswer) {
  for (const std::string end : {"<|return|>", ""}) {
    auto message = parse(
        "<|channel|>analysis<|message|>User asks the sum. It is 5050.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The sum is **5050**." +
        end);
    EXPECT_EQ(message.reasoning, "User asks the sum. It is 5050.");
    EXPECT_EQ(message.content, "The sum is **5050**.");
    EXPECT_TRUE(message.calls.empty());
  }
}

TEST(HarmonyFormat, ReasoningThenCall) {
  auto message = parse(
      "<|channel|>analysis<|message|>User asks weather. Call tool.<|end|><|start|>assistant"
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
      "{\"city\":\"Paris\"}<|call|>");
  EXPECT_EQ(message.reasoning, "User asks weather. Call tool.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].name, "get_weather");
  EXPECT_EQ(message.calls[0].arguments, "{\"city\":\"Paris\"}");
}

TEST(HarmonyFormat, RecipientBeforeChannel) {
  // The first message continues the generation prompt's `<|start|>assistant`.
  auto first =
      parse(" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}");
  ASSERT_EQ(first.calls.size(), 1u);
  EXPECT_EQ(first.calls[0].name, "get_weather");
  EXPECT_EQ(first.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(first.content, "");

  auto later = parse(
      "<|channel|>analysis<|message|>Search first.<|end|><|start|>assistant to=functions.search"
      "<|channel|>commentary <|constrain|>json<|message|>{\"q\": \"mlx\"}<|call|>");
  EXPECT_EQ(later.reasoning, "Search first.");
  ASSERT_EQ(later.calls.size(), 1u);
  EXPECT_EQ(later.calls[0].name, "search");
  EXPECT_EQ(later.calls[0].arguments, "{\"q\": \"mlx\"}");
}

TEST(HarmonyFormat, PreambleOnCommentaryThenCall) {
  auto message = parse(
      "<|channel|>commentary<|message|>Let me check the weather.<|end|><|start|>assistant"
      "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>"
      "{\"city\":\"Oslo\"}<|call|>");
  EXPECT_EQ(message.content, "Let me check the weather.");
  EXPECT_EQ(message.reasoning, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"city\":\"Oslo\"}");
}

TEST(HarmonyFormat, TwoCallsInARow) {
  auto message = parse(
      "<|channel|>analysis<|message|>Two cities.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
      "<|start|>assistant<|channel|>analysis<|message|>Now Oslo.<|end|>"
      "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
      "{\"city\":\"Oslo\"}<|call|>");
  EXPECT_EQ(message.reasoning, "Two cities.Now Oslo.");
  ASSERT_EQ(message.calls.size(), 2u);
  EXPECT_EQ(message.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(message.calls[1].arguments, "{\"city\":\"Oslo\"}");
}

TEST(HarmonyFormat, OneCallWhenParallelCallsAreOff) {
  ToolContext context;
  context.tools = testing::tools_named(kTools);
  auto message = parse_checked(harmony(),
                               "<|channel|>commentary to=functions.search<|message|>{}<|call|>"
                               "<|start|>assistant<|channel|>commentary to=functions.search"
                               "<|message|>{\"q\": 1}<|call|>",
                               context, /*max_calls=*/1);
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{}");
}

TEST(HarmonyFormat, TextWithoutHeadersIsContent) {
  const std::string text = "The model skipped the structure: 2 < 3 and a|b.\nSecond line.";
  auto message = parse(text);
  EXPECT_EQ(message.content, text);
  EXPECT_TRUE(message.calls.empty());
  EXPECT_EQ(message.reasoning, "");

  // Text before a message, as some servers' tests show it.
  auto before = parse(
      "Let me search for that.\n<|channel|>commentary to=functions.search<|constrain|>json"
      "<|message|>{\"q\": \"rust\"}<|call|>");
  EXPECT_EQ(before.content, "Let me search for that.");
  ASSERT_EQ(before.calls.size(), 1u);
  EXPECT_EQ(before.calls[0].arguments, "{\"q\": \"rust\"}");

  // A plain answer starting with "to" is no recipient.
  EXPECT_EQ(parse("today is fine").content, "today is fine");
}

TEST(HarmonyFormat, TruncatedAtEveryStage) {
  const std::string text =
      "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary"
      "<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>"
      "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>";
  const auto whole = parse(text);
  EXPECT_EQ(whole.reasoning, "Think.");
  EXPECT_EQ(whole.content, "Checking.Sunny.");
  ASSERT_EQ(whole.calls.size(), 1u);
  for (size_t length = 0; length < text.size(); ++length) {
    const auto cut = parse(text.substr(0, length));
    for (const auto& marker : harmony().marker_tokens()) {
      EXPECT_EQ(cut.content.find(marker), std::string::npos) << length;
      EXPECT_EQ(cut.reasoning.find(marker), std::string::npos) << length;
    }
    // What an answer cut short shows is what the whole one begins with,
    // unless the cut halves a marker (nothing completes it: it is text).
    const size_t marker_begin = text.rfind("<|", length);
    const bool halves_marker = marker_begin != std::string::npos &&
                               text.find("|>", marker_begin) + 2 > length && marker_begin < length;
    if (!halves_marker) {
      EXPECT_TRUE(whole.content.starts_with(cut.content)) << length << ": " << cut.content;
      EXPECT_TRUE(whole.reasoning.starts_with(cut.reasoning)) << length << ": " << cut.reasoning;
    }
    ASSERT_LE(cut.calls.size(), 1u);
    if (!cut.calls.empty()) {
      EXPECT_EQ(cut.calls[0].name, "get_weather");
    }
  }
}

TEST(HarmonyFormat, CutShortInsideEachPart) {
  // In a header: nothing of that message shows.
  auto in_header = parse("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|chan");
  EXPECT_EQ(in_header.reasoning, "Think.");
  EXPECT_EQ(in_header.content, "");
  auto in_channel =
      parse("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>fin");
  EXPECT_EQ(in_channel.content, "");
  EXPECT_EQ(in_channel.reasoning, "Think.");
  auto in_recipient = parse("<|channel|>commentary to=functions.get_wea");
  EXPECT_TRUE(in_recipient.calls.empty());
  EXPECT_EQ(in_recipient.content, "");
  // A first header written without a marker, cut short, was text after all.
  EXPECT_EQ(parse(" to=functions.get_wea").content, "to=functions.get_wea");
  EXPECT_EQ(parse("to be or not").content, "to be or not");

  // In a body: what was written.
  EXPECT_EQ(parse("<|channel|>analysis<|message|>Half a thou").reasoning, "Half a thou");
  auto in_arguments = parse("<|channel|>commentary to=functions.search<|message|>{\"q\": \"unfini");
  ASSERT_EQ(in_arguments.calls.size(), 1u);
  EXPECT_EQ(in_arguments.calls[0].arguments, "{\"q\": \"unfini");

  // Right after a call's header: a call with no arguments yet.
  auto no_arguments =
      parse("<|channel|>commentary to=functions.search<|constrain|>json<|message|>");
  ASSERT_EQ(no_arguments.calls.size(), 1u);
  EXPECT_EQ(no_arguments.calls[0].arguments, "{}");
}

TEST(HarmonyFormat, PartialMarkerAtTheEndIsText) {
  EXPECT_EQ(parse("Hello <|chan").content, "Hello <|chan");
  EXPECT_EQ(parse("<|channel|>final<|message|>Done<|en").content, "Done<|en");
}

TEST(HarmonyFormat, ExtraWhitespace) {
  auto message = parse(
      "\n<|channel|>analysis<|message|> Think. \n<|end|>\n\n<|start|>assistant "
      "<|channel|>commentary"
      "  to=functions.get_weather  <|constrain|>json <|message|> \n{\"city\": \"Paris\"}\n "
      "<|call|>\n");
  EXPECT_EQ(message.reasoning, " Think. \n");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.calls.size(), 1u);
  EXPECT_EQ(message.calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(HarmonyFormat, MissingEndMarkersAndStrayMarkers) {
  // A message the model did not end: the next header ends it.
  auto unended =
      parse("<|channel|>analysis<|message|>Think.<|start|>assistant<|channel|>final<|message|>OK.");
  EXPECT_EQ(unended.reasoning, "Think.");
  EXPECT_EQ(unended.content, "OK.");

  // Markers out of place are dropped, never shown.
  auto stray = parse("Hello<|end|> world<|return|>");
  EXPECT_EQ(stray.content, "Helloworld");
  auto inside = parse("<|channel|>final<|message|>a<|message|>b<|constrain|>c<|end|>");
  EXPECT_EQ(inside.content, "abc");
}

TEST(HarmonyFormat, MalformedHeadersAreReadAsText) {
  // No <|message|> before the line ends: the channel's words were the answer.
  auto no_message = parse("<|channel|>final The answer is 42.\nThat is all.");
  EXPECT_EQ(no_message.content, "The answer is 42.\nThat is all.");
  EXPECT_TRUE(no_message.calls.empty());

  // A header ended by the wrong marker.
  auto wrong_end = parse("<|start|>assistant<|end|>Hi there");
  EXPECT_EQ(wrong_end.content, "Hi there");

  // A channel word too long to be one is kept.
  const std::string long_word(300, 'x');
  EXPECT_EQ(parse("<|channel|>" + long_word).content, long_word);

  // `to=functions.` naming nothing is no call.
  auto nameless = parse("<|channel|>commentary to=functions.<|message|>{}<|call|>");
  EXPECT_TRUE(nameless.calls.empty());
  EXPECT_EQ(nameless.content, "{}");
}

TEST(HarmonyFormat, OtherRecipientsFollowTheirChannel) {
  // gpt-oss's built-in browser tool is no function of ours.
  auto browser = parse(
      "<|channel|>analysis to=browser.search code<|message|>{\"query\": \"weather\"}<|call|>");
  EXPECT_TRUE(browser.calls.empty());
  EXPECT_EQ(browser.reasoning, "{\"query\": \"weather\"}");

  // A recipient without the namespace that names an offered tool.
  auto bare = parse("<|channel|>commentary to=search<|message|>{\"q\": 2}<|call|>");
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].name, "search");
}

TEST(HarmonyFormat, RendersGptOssTemplateCalls) {
  // What openai/gpt-oss-20b's chat template writes for the probe call past
  // its generation prompt (`<|start|>assistant`).
  EXPECT_TRUE(
      harmony().renders(" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": "
                        "\"Paris\"}<|call|>"));
  EXPECT_FALSE(
      harmony().renders("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                        "\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(harmony().renders("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}</s>"));
  EXPECT_TRUE(harmony().parses_reasoning());
  auto markers = harmony().marker_tokens();
  std::sort(markers.begin(), markers.end());
  EXPECT_EQ(markers,
            (std::vector<std::string>{"<|call|>", "<|channel|>", "<|constrain|>", "<|end|>",
                                      "<|message|>", "<|return|>", "<|start|>"}));
}

}  // namespace
}  // namespace mlx_cpp::chat
