// Sampler and processor validation, stop-string hold-back, and the exact
// comparison the parity tests rely on.
#include "model/sampler.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>

#include "engine/stop_matcher.h"
#include "golden_case.h"
#include "io/error.h"
#include "model/logits_processors.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

TEST(SamplerOptions, OutOfRangeValuesAreRejected) {
  auto rejects = [](SamplerOptions options) {
    EXPECT_THROW(validate_sampler_options(options, 100), Error);
  };
  rejects({.temperature = -1});
  rejects({.top_p = 0.0f});
  rejects({.top_p = 1.5f});
  rejects({.min_p = 2.0f});
  rejects({.top_k = 100});
  EXPECT_NO_THROW(validate_sampler_options({.temperature = 0.7f, .top_k = 50}, 100));
}

TEST(SamplerOptions, LogitBiasOutsideVocabularyIsRejected) {
  PenaltyOptions options;
  options.logit_bias[100] = 1.0f;
  EXPECT_THROW(validate_penalty_options(options, 100), Error);
}

TEST(Sampler, GreedyTakesTheArgmax) {
  Sampler sampler({});
  auto logprobs = mx::array({-3.0f, -0.1f, -2.0f}, {1, 3});
  EXPECT_EQ(sampler(logprobs).item<uint32_t>(), 1u);
}

TEST(Sampler, SameSeedSameDraws) {
  auto draw = [](uint64_t seed) {
    Sampler sampler({.temperature = 1.0f, .seed = seed});
    auto logprobs = mx::log(mx::full({1, 50}, 1.0f / 50));
    std::vector<uint32_t> ids;
    for (int i = 0; i < 20; ++i) ids.push_back(sampler(logprobs).item<uint32_t>());
    return ids;
  };
  EXPECT_EQ(draw(3), draw(3));
  EXPECT_NE(draw(3), draw(4));
}

TEST(LogitsProcessors, FrequencyPenaltyCountsOccurrences) {
  PenaltyOptions options;
  options.frequency_penalty = 0.5f;
  auto logits = mx::zeros({1, 4});
  auto result = apply_logits_processors(logits, {1, 1, 1, 2}, options);
  auto expected = mx::array({0.0f, -1.5f, -0.5f, 0.0f}, {1, 4});
  EXPECT_TRUE(mx::array_equal(result, expected).item<bool>());
}

TEST(StopMatcher, HoldsBackPartialStopsAndCutsAtTheMatch) {
  StopMatcher matcher({"</end>"});
  EXPECT_EQ(matcher.add("Hello </"), "Hello ");
  EXPECT_EQ(matcher.add("en"), "");
  EXPECT_EQ(matcher.add("d> trailing"), "");
  EXPECT_TRUE(matcher.matched());
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopMatcher, ReleasesHeldTextWhenNoStopFollows) {
  StopMatcher matcher({"STOP"});
  EXPECT_EQ(matcher.add("abcST"), "abc");
  EXPECT_EQ(matcher.add("x"), "STx");
  EXPECT_EQ(matcher.add("S"), "");
  EXPECT_EQ(matcher.flush(), "S");
  EXPECT_FALSE(matcher.matched());
}

TEST(CompareExact, DetectsOneUlpAndDtypeDifferences) {
  auto a = mx::array({1.0f, 2.0f});
  auto b = mx::array({1.0f, std::nextafter(2.0f, 3.0f)});
  EXPECT_EQ(testing::compare_exact(a, a), "");
  EXPECT_NE(testing::compare_exact(a, b), "");
  EXPECT_NE(testing::compare_exact(a, mx::astype(a, mx::bfloat16)), "");
}

}  // namespace
}  // namespace mlx_cpp
