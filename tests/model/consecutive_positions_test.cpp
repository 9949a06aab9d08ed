// A forward of consecutive tokens of one sequence as batch rows
// (ForwardBatch::consecutive_positions, how speculative decoding verifies
// drafts) against decoding the same tokens one step at a time: every
// row's logits bit for bit, and the caches it leaves decode on as the
// stepped ones do. Every architecture, both kernel modes, from inside a
// prompt and past gemma's sliding window.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include "golden_case.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

constexpr int kVerifiedTokens = 6;

mx::array one_token(int id) {
  return mx::array({id}, {1, 1}, mx::int32);
}

struct Case {
  std::string golden;
  KernelMode kernels;
};

class ConsecutivePositions : public ::testing::TestWithParam<Case> {};

TEST_P(ConsecutivePositions, EachRowIsTheLogitsOfDecodingItsToken) {
  auto golden = testing::GoldenCase::load(GetParam().golden);
  auto loaded = load_model(golden.model_directory, {GetParam().kernels});
  const auto& model = *loaded.model;
  for (const auto& [name, prompt] : golden.goldens["prompts"].items()) {
    SCOPED_TRACE("prompt " + name);
    auto ids = prompt["ids"].get<std::vector<int>>();
    if (static_cast<int>(ids.size()) <= kVerifiedTokens + 1) continue;
    const int prefix = static_cast<int>(ids.size()) - kVerifiedTokens;
    auto stepped = model.make_caches();
    model.forward(mx::array(ids.data(), {1, prefix}, mx::int32), stepped);
    evaluate_cache_state(stepped);
    auto together = clone_cache_list(stepped);

    std::vector<mx::array> expected;
    for (int i = prefix; i < static_cast<int>(ids.size()); ++i) {
      expected.push_back(model.forward(one_token(ids[i]), stepped));
      mx::eval(expected.back());
    }
    ForwardBatch batch;
    batch.consecutive_positions = true;
    for (int i = 0; i < kVerifiedTokens; ++i) batch.rows.push_back({&together, std::nullopt});
    auto tail = mx::array(ids.data() + prefix, {kVerifiedTokens, 1}, mx::int32);
    auto actual = model.forward_batch(tail, batch);
    mx::eval(actual);
    ASSERT_EQ(actual.shape(0), kVerifiedTokens);
    for (int i = 0; i < kVerifiedTokens; ++i) {
      auto row = mx::slice(actual, {i, 0, 0}, {i + 1, 1, actual.shape(2)});
      EXPECT_EQ(testing::compare_exact(row, expected[i]), "") << "position " << prefix + i;
    }
    ASSERT_EQ(together.front()->offset(), stepped.front()->offset());
    // The caches hold what the stepped ones hold: the next step agrees.
    auto next_expected = model.forward(one_token(ids.front()), stepped);
    auto next_actual = model.forward(one_token(ids.front()), together);
    EXPECT_EQ(testing::compare_exact(next_actual, next_expected), "") << "the step after";
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& name : testing::model_golden_cases())
    for (auto kernels : {KernelMode::stock, KernelMode::fast}) cases.push_back({name, kernels});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, ConsecutivePositions, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           return info.param.golden +
                                  (info.param.kernels == KernelMode::fast ? "_fast" : "_stock");
                         });

}  // namespace
}  // namespace mlx_cpp
