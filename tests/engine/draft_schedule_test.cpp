// Confidence scheduling's decisions from its calibration and costs: it
// verifies more drafts where they are accepted and verifies cost little,
// none (plain decoding, with a rare exploring draft) where verifies cost
// what plain steps do, and it keeps what it learned in its file.
#include "engine/speculative/draft_schedule.h"

#include <gtest/gtest.h>

#include <fstream>

namespace mlx_cpp {
namespace {

// `steps` verifies of every length up to 9 costing `cost(length)`.
void teach_costs(DraftSchedule& schedule, double (*cost)(int)) {
  for (int step = 0; step < 5; ++step)
    for (int length = 1; length <= 9; ++length) schedule.record_cost(length, cost(length), 0, 0, 0);
}

TEST(DraftSchedule, VerifiesLongRunsWhereTheyPayAndNoneWhereTheyDoNot) {
  DraftSchedule schedule(DraftKind::prompt_lookup, std::nullopt);
  // Continued copies (confidence 4 at n-gram limit 3) are always accepted.
  for (int i = 0; i < 200; ++i) schedule.record_outcome({4, 4, 4, 4, 4, 4, 4, 4}, 8);
  teach_costs(schedule, [](int length) { return 0.010 + 0.001 * (length - 1); });
  const std::vector<float> copy(8, 4.0f);
  EXPECT_EQ(schedule.choose(copy), 8);
  EXPECT_TRUE(schedule.worth_drafting(8));
  EXPECT_TRUE(schedule.worth_another({4, 4}, 8));
  EXPECT_FALSE(schedule.worth_another(copy, 8));  // the limit

  // Verifies that cost a plain step per token never pay.
  DraftSchedule costly(DraftKind::prompt_lookup, std::nullopt);
  for (int i = 0; i < 200; ++i) costly.record_outcome({4, 4, 4, 4}, 4);
  teach_costs(costly, [](int length) { return 0.010 * length; });
  EXPECT_EQ(costly.choose(copy), 0);
  std::vector<int> exploring;
  for (int step = 1; step <= 15 * DraftSchedule::kExploreEvery; ++step)
    if (costly.worth_drafting(8)) exploring.push_back(step);
  // Exploring steps after 32, then 64, 128, 256 more plain steps.
  const int e = DraftSchedule::kExploreEvery;
  EXPECT_EQ(exploring, (std::vector<int>{e, 3 * e, 7 * e, 15 * e}));
}

TEST(DraftSchedule, StopsAtTheFirstUnlikelyDraft) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  // Confident drafts (probability 0.9+) are accepted, unsure ones (< 0.1) not.
  for (int i = 0; i < 300; ++i) {
    schedule.record_outcome({0.95f, 0.95f, 0.95f}, 3);
    schedule.record_outcome({0.05f}, 0);
  }
  teach_costs(schedule, [](int length) { return 0.010 + 0.002 * (length - 1); });
  EXPECT_EQ(schedule.choose({0.95f, 0.95f, 0.05f, 0.95f}), 2);
  EXPECT_GT(schedule.acceptance(0.95f, 0), 0.95);
  EXPECT_LT(schedule.acceptance(0.05f, 0), 0.05);
}

TEST(DraftSchedule, DraftsAlreadyMadeCostTheSameWhateverIsVerified) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  for (int i = 0; i < 300; ++i) schedule.record_outcome({0.95f, 0.95f}, 2);
  // A verify costs a plain step (10 ms) and half a step per draft; a draft
  // costs a whole plain step.
  for (int step = 0; step < 5; ++step)
    for (int length = 1; length <= 9; ++length)
      schedule.record_cost(length, 0.010 + 0.005 * (length - 1), 1, 0.010, 0);
  // Before drafting, a draft does not pay: 1.95 tokens in 25 ms against 1
  // in 10 (nor do more).
  EXPECT_FALSE(schedule.worth_drafting(8));
  // Once two drafts are made their 20 ms are spent whatever is verified:
  // verifying both yields 2.9 tokens in 40 ms, none 1 in 30.
  EXPECT_EQ(schedule.choose({0.95f, 0.95f}), 2);
}

TEST(DraftSchedule, PaysTheFirstDraftsCatchUpOncePerStep) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  for (int i = 0; i < 300; ++i) schedule.record_outcome({0.95f, 0.95f, 0.95f}, 3);
  // A step's first draft costs 40 ms (the draft model catching up with
  // the step's tokens), each later one 10 ms; a verify 50 ms and 10 ms per
  // draft. Steps of one draft and of three were seen.
  for (int step = 0; step < 5; ++step) {
    for (int length = 1; length <= 9; ++length)
      schedule.record_cost(length, 0.050 + 0.010 * (length - 1), 0, 0, 0);
    schedule.record_cost(2, 0.060, 1, 0.040, 0);
    schedule.record_cost(4, 0.080, 3, 0.040, 0.020);
  }
  EXPECT_DOUBLE_EQ(schedule.draft_seconds(1), 0.040);
  EXPECT_DOUBLE_EQ(schedule.draft_seconds(3), 0.060);
  // After one draft a second one pays: 3 tokens in 120 ms against 2 in
  // 100 (at 40 ms a draft, as steps of one draft alone would suggest, 3
  // in 150).
  EXPECT_TRUE(schedule.worth_another({0.95f}, 8));
}

TEST(DraftSchedule, DraftsWhereSeveralDraftsPayThoughOneAloneWouldNot) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  for (int i = 0; i < 300; ++i) schedule.record_outcome({0.95f, 0.95f, 0.95f, 0.95f}, 4);
  // A plain step 50 ms, a verify 70 ms and 10 ms per draft beyond the
  // first; a step's first draft 40 ms, each later one 20 ms. One draft: 2
  // tokens in 110 ms, less than plain decoding's 1 in 50; four: 5 tokens
  // in 200 ms, more.
  for (int step = 0; step < 5; ++step) {
    schedule.record_cost(1, 0.050, 0, 0, 0);
    for (int length = 2; length <= 9; ++length)
      schedule.record_cost(length, 0.070 + 0.010 * (length - 2), 0, 0, 0);
    schedule.record_cost(5, 0.100, 4, 0.040, 0.060);
  }
  EXPECT_TRUE(schedule.worth_drafting(4));
  EXPECT_FALSE(schedule.worth_drafting(1));
  // Having drafted one, it drafts on.
  EXPECT_TRUE(schedule.worth_another({0.95f}, 4));
}

TEST(DraftSchedule, TriesTheNextLongerVerifyUntilItIsTimed) {
  DraftSchedule schedule(DraftKind::prompt_lookup, std::nullopt);
  // First drafts always accepted; later ones never tried yet.
  for (int i = 0; i < 200; ++i) schedule.record_outcome({4}, 1);
  // A pipelined plain step costs 10 ms, a verify of two tokens 16 ms: the
  // line through them would put a verify of nine at 58 ms.
  for (int step = 0; step < 5; ++step) {
    schedule.record_cost(1, 0.010, 0, -1, -1);
    schedule.record_cost(2, 0.016, 0, -1, -1);
  }
  const std::vector<float> copy(8, 4.0f);
  EXPECT_EQ(schedule.choose({4}), 1);   // no longer verify to try
  EXPECT_EQ(schedule.choose(copy), 2);  // length 3 not timed yet
  // Timed (its first sample is left out) at 17 ms, the line through 16 and
  // 17 ms makes every draft pay.
  schedule.record_cost(3, 0.017, 0, -1, -1);
  EXPECT_EQ(schedule.choose(copy), 2);
  schedule.record_cost(3, 0.017, 0, -1, -1);
  schedule.record_outcome({4, 4}, 2);
  schedule.record_outcome({4, 4}, 2);
  EXPECT_EQ(schedule.choose(copy), 8);
  // Once a verify of nine is timed and does not pay, the lengths between
  // are estimated between the timed ones, and none is tried.
  schedule.record_cost(9, 0.200, 0, -1, -1);
  schedule.record_cost(9, 0.200, 0, -1, -1);
  EXPECT_EQ(schedule.choose(copy), 2);
  // Where no draft pays, nothing is tried.
  DraftSchedule costly(DraftKind::prompt_lookup, std::nullopt);
  for (int i = 0; i < 200; ++i) costly.record_outcome({4}, 0);
  for (int step = 0; step < 5; ++step) {
    costly.record_cost(1, 0.010, 0, -1, -1);
    costly.record_cost(2, 0.016, 0, -1, -1);
  }
  EXPECT_EQ(costly.choose(copy), 0);
}

TEST(DraftSchedule, DraftsAnotherToTimeALongerVerify) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  // Drafts of probability 0.85 accepted 80 times in 100 (0.80 calibrated).
  for (int i = 0; i < 100; ++i) schedule.record_outcome({0.85f}, i < 80 ? 1 : 0);
  // A plain step 10 ms, a verify of one draft 12 ms, a first draft 5 ms
  // (each first sample left out); no later draft timed yet. By these
  // costs one draft pays (105.6 tokens/s against 100) and a second, priced
  // as the first on a line through the two verifies, does not (101.3).
  for (int step = 0; step < 2; ++step) {
    schedule.record_cost(1, 0.010, 0, -1, -1);
    schedule.record_cost(2, 0.012, 1, 0.005, -1);
  }
  EXPECT_EQ(schedule.choose({0.85f}), 1);
  // A verify of three tokens was never timed: a second draft is made so
  // that choose() can try it.
  EXPECT_TRUE(schedule.worth_another({0.85f}, 8));
  // Timed, and too slow to pay: no more exploring.
  schedule.record_cost(3, 0.030, 2, 0.005, 0.005);
  schedule.record_cost(3, 0.030, 2, 0.005, 0.005);
  EXPECT_FALSE(schedule.worth_another({0.85f}, 8));
  // Where one draft does not pay either, the sequence decodes plainly and
  // drafts nothing to explore with.
  DraftSchedule costly(DraftKind::draft_model, std::nullopt);
  for (int i = 0; i < 100; ++i) costly.record_outcome({0.85f}, i < 80 ? 1 : 0);
  for (int step = 0; step < 2; ++step) {
    costly.record_cost(1, 0.010, 0, -1, -1);
    costly.record_cost(2, 0.019, 1, 0.005, -1);
  }
  EXPECT_FALSE(costly.worth_drafting(8));
}

TEST(DraftSchedule, CountsOnlyTheDraftsTheVerifyJudged) {
  DraftSchedule schedule(DraftKind::draft_model, std::nullopt);
  // Accepted the first, rejected the second; the third was never judged.
  schedule.record_outcome({0.55f, 0.55f, 0.75f}, 1);
  // Bucket of 0.55: one accepted of two (prior 2 of 3): 3 / 5.
  EXPECT_DOUBLE_EQ(schedule.acceptance(0.55f, 0), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(schedule.acceptance(0.75f, 0), 2.0 / 3.0);  // untouched
}

TEST(DraftSchedule, KeepsItsCalibrationInItsFile) {
  const auto file = std::filesystem::temp_directory_path() / "mlx_cpp_draft_schedule_test.json";
  std::filesystem::remove(file);
  {
    DraftSchedule schedule(DraftKind::prompt_lookup, file);
    for (int i = 0; i < 10; ++i) schedule.record_outcome({2, 2}, 1);
    schedule.record_cost(3, 0.90, 2, 0.010, 0.010);  // a first sample is left out
    schedule.record_cost(3, 0.25, 2, 0.003, 0.001);
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  DraftSchedule reloaded(DraftKind::prompt_lookup, file);
  EXPECT_DOUBLE_EQ(reloaded.acceptance(2, 0), 12.0 / 13.0);
  EXPECT_DOUBLE_EQ(reloaded.acceptance(2, 1), 2.0 / 13.0);
  EXPECT_DOUBLE_EQ(reloaded.verify_seconds(3), 0.25);
  EXPECT_DOUBLE_EQ(reloaded.draft_seconds(2), 0.004);
  // A damaged file is a fresh start, not an error.
  std::ofstream(file) << "{ not json";
  DraftSchedule fresh(DraftKind::prompt_lookup, file);
  EXPECT_DOUBLE_EQ(fresh.acceptance(2, 0), 2.0 / 3.0);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace mlx_cpp
