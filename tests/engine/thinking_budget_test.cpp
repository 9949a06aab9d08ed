// The thinking tracker: it counts the tokens written inside a think block
// and says when the budget is spent, wherever the markup falls between
// tokens.
#include "engine/thinking_budget.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mlx_cpp {
namespace {

ThinkingBudget think_tags(int tokens, bool starts_inside) {
  return {tokens, {"<think>", "</think>", "</think>\n\n"}, starts_inside};
}

// The index of the token after which the tracker asks to close the block,
// or -1 when it never does.
int spent_after(ThinkingTracker& tracker, const std::vector<std::string>& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tracker.add_token(tokens[i])) return static_cast<int>(i);
  return -1;
}

TEST(ThinkingBudget, EnabledOnlyWithMarkupAndALimit) {
  EXPECT_TRUE(think_tags(0, false).enabled());
  EXPECT_FALSE(think_tags(-1, false).enabled());
  EXPECT_FALSE((ThinkingBudget{4, {"<think>", "", ""}, false}).enabled());
}

TEST(ThinkingTracker, APromptThatOpensTheBlockCountsFromTheFirstToken) {
  ThinkingTracker tracker(think_tags(3, true));
  EXPECT_FALSE(tracker.spent_at_start());
  EXPECT_EQ(spent_after(tracker, {"a", "b", "c", "d"}), 2);
  EXPECT_EQ(tracker.reasoning_tokens(), 3);
  EXPECT_FALSE(tracker.inside());
  EXPECT_FALSE(tracker.add_token("<think>")) << "one block per answer is limited";
}

TEST(ThinkingTracker, AZeroBudgetOnAnOpenBlockIsSpentBeforeTheFirstToken) {
  ThinkingTracker tracker(think_tags(0, true));
  EXPECT_TRUE(tracker.spent_at_start());
  EXPECT_EQ(spent_after(tracker, {"a", "b"}), -1);
}

TEST(ThinkingTracker, TheBlockOpensWhereTheModelWritesTheStartMarkup) {
  ThinkingTracker tracker(think_tags(2, false));
  // The start markup split over tokens, text before it not counted.
  EXPECT_EQ(spent_after(tracker, {"Hi ", "<th", "ink>", "x", "y", "z"}), 4);
  EXPECT_EQ(tracker.reasoning_tokens(), 2);
}

TEST(ThinkingTracker, AZeroBudgetClosesTheBlockAsItOpens) {
  ThinkingTracker tracker(think_tags(0, false));
  EXPECT_EQ(spent_after(tracker, {"<think>", "x"}), 0);
}

TEST(ThinkingTracker, ABlockTheModelClosesInTimeIsLeftAlone) {
  ThinkingTracker tracker(think_tags(5, true));
  EXPECT_EQ(spent_after(tracker, {"a", "</th", "ink>", "b", "c", "d", "e", "f", "g"}), -1);
  EXPECT_EQ(tracker.reasoning_tokens(), 2) << "the token that starts the end markup counts";
  EXPECT_FALSE(tracker.inside());
}

TEST(ThinkingTracker, WithoutStartMarkupNothingOpens) {
  ThinkingTracker tracker(think_tags(1, false));
  EXPECT_EQ(spent_after(tracker, {"<thin", "k", "> is not ", "</think>", "x"}), -1);
}

TEST(ThinkingTracker, HarmonyAnalysisChannel) {
  ThinkingTracker tracker({2,
                           {"<|channel|>analysis<|message|>", "<|end|>",
                            "<|end|><|start|>assistant<|channel|>final<|message|>"},
                           false});
  EXPECT_EQ(spent_after(tracker, {"<|channel|>", "analysis", "<|message|>", "We", " think", "!"}),
            4);
}

}  // namespace
}  // namespace mlx_cpp
