// The think-tag splitter on its own: every answer is fed whole, split in two
// at every byte, and byte by byte, and all must split the same, since a
// streamed answer and a whole one are the same text arriving differently.
#include "chat/reasoning_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mlx_cpp::chat {
namespace {

const ReasoningMarkers kThink = {"<think>", "</think>"};

struct Split {
  std::string reasoning;
  std::string content;
  bool operator==(const Split&) const = default;
};

std::string describe(const Split& split) {
  return "reasoning=[" + split.reasoning + "] content=[" + split.content + "]";
}

Split feed_pieces(const std::vector<std::string>& pieces, bool starts_inside) {
  ReasoningSplitter splitter(kThink, starts_inside);
  Split split;
  auto add = [&split](const OutputDelta& delta) {
    EXPECT_TRUE(delta.tool_calls.empty()) << "the splitter never makes calls";
    split.reasoning += delta.reasoning;
    split.content += delta.content;
  };
  for (const auto& piece : pieces) add(splitter.feed(piece));
  add(splitter.finish());
  return split;
}

// The split of `text`, after checking that every way of streaming it agrees.
Split split_checked(const std::string& text, bool starts_inside = false) {
  const Split whole = feed_pieces({text}, starts_inside);
  for (size_t at = 1; at < text.size(); ++at) {
    const Split parts = feed_pieces({text.substr(0, at), text.substr(at)}, starts_inside);
    EXPECT_EQ(parts, whole) << "split at byte " << at << ": " << describe(parts)
                            << "\n whole: " << describe(whole);
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  const Split streamed = feed_pieces(bytes, starts_inside);
  EXPECT_EQ(streamed, whole) << "byte by byte: " << describe(streamed)
                             << "\n whole: " << describe(whole);
  // Empty pieces, as a detokenizer gives for a token it holds back, change nothing.
  std::vector<std::string> with_empty;
  for (const auto& byte : bytes) {
    with_empty.push_back(byte);
    with_empty.emplace_back();
  }
  EXPECT_EQ(feed_pieces(with_empty, starts_inside), whole) << "with empty pieces";
  return whole;
}

TEST(ReasoningSplitter, BlockThenAnswer) {
  auto split = split_checked("<think>\nplan\n</think>\n\nanswer");
  EXPECT_EQ(split.reasoning, "plan");
  EXPECT_EQ(split.content, "answer");
}

TEST(ReasoningSplitter, SpaceInsideTheBlockAndTheAnswerIsKept) {
  auto split = split_checked("<think>\n step one\n\n step two \n</think>\n\nThe answer:\n 42\n");
  EXPECT_EQ(split.reasoning, "step one\n\n step two");
  EXPECT_EQ(split.content, "The answer:\n 42\n");
}

TEST(ReasoningSplitter, BlockOpenedByThePrompt) {
  auto split = split_checked("plan</think>answer", /*starts_inside=*/true);
  EXPECT_EQ(split.reasoning, "plan");
  EXPECT_EQ(split.content, "answer");

  auto spaced = split_checked("\n\nplan\n</think>\n\nanswer", /*starts_inside=*/true);
  EXPECT_EQ(spaced.reasoning, "plan");
  EXPECT_EQ(spaced.content, "answer");
}

TEST(ReasoningSplitter, NoBlockLeavesTheAnswerUnchanged) {
  for (const std::string text : {"answer", "  \n answer\n", "\n\n", "", "<thi", "< think>x"}) {
    auto split = split_checked(text);
    EXPECT_EQ(split.reasoning, "") << text;
    EXPECT_EQ(split.content, text);
  }
}

TEST(ReasoningSplitter, UnclosedBlockIsAllReasoning) {
  // An answer cut by max_tokens inside the block.
  auto split = split_checked("<think>\nstill thinking about it");
  EXPECT_EQ(split.reasoning, "still thinking about it");
  EXPECT_EQ(split.content, "");

  auto opened = split_checked("still thinking", /*starts_inside=*/true);
  EXPECT_EQ(opened.reasoning, "still thinking");
  EXPECT_EQ(opened.content, "");

  auto bare = split_checked("<think>");
  EXPECT_EQ(bare.reasoning, "");
  EXPECT_EQ(bare.content, "");
}

TEST(ReasoningSplitter, SpaceBeforeTheBlock) {
  auto split = split_checked(" \n\t<think>plan</think>answer");
  EXPECT_EQ(split.reasoning, "plan");
  EXPECT_EQ(split.content, "answer");
}

TEST(ReasoningSplitter, PartialEndMarkerAtTheEndStaysReasoning) {
  // Held back while it might still become </think>, then released as it stands.
  auto split = split_checked("<think>plan</thi");
  EXPECT_EQ(split.reasoning, "plan</thi");
  EXPECT_EQ(split.content, "");

  auto spaced = split_checked("<think>plan\n</");
  EXPECT_EQ(spaced.reasoning, "plan\n</");

  auto broken = split_checked("<think>a </thinking> b</think>c");
  EXPECT_EQ(broken.reasoning, "a </thinking> b");
  EXPECT_EQ(broken.content, "c");
}

TEST(ReasoningSplitter, StartMarkerLaterIsContent) {
  // Only the start of the answer opens a block; later tags are text the
  // model writes about them.
  const std::string text = "Use <think>tags</think> like this.";
  auto split = split_checked(text);
  EXPECT_EQ(split.reasoning, "");
  EXPECT_EQ(split.content, text);

  auto after = split_checked("<think>a</think>b <think>c</think>");
  EXPECT_EQ(after.reasoning, "a");
  EXPECT_EQ(after.content, "b <think>c</think>");
}

TEST(ReasoningSplitter, EmptyBlock) {
  auto split = split_checked("<think></think>answer");
  EXPECT_EQ(split.reasoning, "");
  EXPECT_EQ(split.content, "answer");

  // As Qwen3 writes it with thinking switched off.
  auto spaced = split_checked("<think>\n\n</think>\n\nanswer");
  EXPECT_EQ(spaced.reasoning, "");
  EXPECT_EQ(spaced.content, "answer");
}

TEST(ReasoningSplitter, ToolCallMarkupInsideTheBlockIsReasoning) {
  const std::string call =
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>";
  auto split = split_checked("<think>\nMaybe " + call + "\n</think>\nDone.");
  EXPECT_EQ(split.reasoning, "Maybe " + call);
  EXPECT_EQ(split.content, "Done.");
}

TEST(ReasoningSplitter, InsideFollowsTheBlock) {
  ReasoningSplitter splitter(kThink, /*starts_inside=*/false);
  EXPECT_FALSE(splitter.inside());
  splitter.feed("<think>a");
  EXPECT_TRUE(splitter.inside());
  splitter.feed("</think>b");
  EXPECT_FALSE(splitter.inside());

  ReasoningSplitter opened(kThink, /*starts_inside=*/true);
  EXPECT_TRUE(opened.inside());
}

TEST(PromptOpensReasoning, EndsInsideAnOpenBlock) {
  EXPECT_TRUE(prompt_opens_reasoning(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", kThink));
  // A closed block earlier in the conversation does not count.
  EXPECT_TRUE(
      prompt_opens_reasoning("<|im_start|>assistant\n<think>\nold\n</think>\n\nhello<|im_end|>\n"
                             "<|im_start|>assistant\n<think>\n",
                             kThink));
}

TEST(PromptOpensReasoning, ClosedOrAbsentBlock) {
  // Qwen3 with enable_thinking=false closes the block in the prompt.
  EXPECT_FALSE(prompt_opens_reasoning(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", kThink));
  EXPECT_FALSE(
      prompt_opens_reasoning("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", kThink));
  EXPECT_FALSE(prompt_opens_reasoning("", kThink));
}

TEST(PromptOpensReasoning, NoMarkers) {
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", ReasoningMarkers{}));
}

}  // namespace
}  // namespace mlx_cpp::chat
