// The contract with mlx-lm: for every architecture x {bf16, q4, q8}, the
// stock path reproduces mlx-lm's logits bit for bit (its own generation loop
// and a full forward at every position), its greedy tokens, and the tokens
// it samples with a seed under every sampler option and penalty.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include "engine/token_generator.h"
#include "golden_case.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_exact;
using testing::GoldenCase;

std::vector<int> ids_of(const nlohmann::json& values) {
  return values.get<std::vector<int>>();
}

struct Run {
  std::vector<int> tokens;
  std::vector<mx::array> logits;
};

Run run_generation(const LoadedModel& loaded, const std::vector<int>& prompt, int max_tokens,
                   const GenerationOptions& base_options = {}) {
  Run run;
  auto caches = loaded.model->make_caches();
  GenerationOptions options = base_options;
  options.max_tokens = max_tokens;
  generate_tokens(
      *loaded.model, caches, prompt, options, /*eos_token_ids=*/{},
      [&](const GeneratedToken& token) {
        run.tokens.push_back(token.id);
        return true;
      },
      {}, [&](const mx::array& logits) { run.logits.push_back(logits); });
  return run;
}

class ModelParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden_ = GoldenCase::load(GetParam());
    loaded_ = load_model(golden_.model_directory);
  }
  GoldenCase golden_;
  LoadedModel loaded_;
};

TEST_P(ModelParity, GenerationLoopLogitsAndGreedyTokensAreBitExact) {
  const int steps = 8;
  for (const auto& [name, prompt] : golden_.goldens["prompts"].items()) {
    SCOPED_TRACE("prompt " + name);
    auto run = run_generation(loaded_, ids_of(prompt["ids"]), steps);
    EXPECT_EQ(run.tokens, ids_of(prompt["greedy"]));
    auto logits = mx::concatenate(run.logits, 0);
    EXPECT_EQ(compare_exact(logits, golden_.logits.at(name + ".generation")), "");
  }
}

TEST_P(ModelParity, FullForwardLogitsAreBitExactAtEveryPosition) {
  for (const auto& [name, prompt] : golden_.goldens["prompts"].items()) {
    SCOPED_TRACE("prompt " + name);
    auto ids = ids_of(prompt["ids"]);
    auto caches = loaded_.model->make_caches();
    auto input = mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32);
    auto logits = loaded_.model->forward(input, caches);
    EXPECT_EQ(compare_exact(mx::squeeze(logits, 0), golden_.logits.at(name + ".forward")), "");
  }
}

TEST_P(ModelParity, SeededSamplingReproducesTokens) {
  for (const auto& [name, prompt] : golden_.goldens["prompts"].items()) {
    for (const auto& params : prompt["sampled"]) {
      SCOPED_TRACE("prompt " + name + ", sampler " + params["name"].get<std::string>());
      GenerationOptions options;
      options.sampler.temperature = params["temp"].get<float>();
      options.sampler.top_p = params.value("top_p", 1.0f);
      options.sampler.min_p = params.value("min_p", 0.0f);
      options.sampler.top_k = params.value("top_k", 0);
      options.sampler.seed = params["seed"].get<uint64_t>();
      if (params.contains("repetition_penalty"))
        options.penalties.repetition_penalty = params["repetition_penalty"].get<float>();
      if (params.contains("presence_penalty"))
        options.penalties.presence_penalty = params["presence_penalty"].get<float>();
      if (params.contains("frequency_penalty"))
        options.penalties.frequency_penalty = params["frequency_penalty"].get<float>();
      if (params.contains("logit_bias"))
        for (const auto& [id, bias] : params["logit_bias"].items())
          options.penalties.logit_bias[std::stoi(id)] = bias.get<float>();
      auto run = run_generation(loaded_, ids_of(prompt["ids"]), 8, options);
      EXPECT_EQ(run.tokens, ids_of(params["tokens"]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, ModelParity,
                         ::testing::ValuesIn(testing::model_golden_cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mlx_cpp
