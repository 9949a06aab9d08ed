// Real models, converted from GGUF: mlx-lm loading the converted directory
// and mlx-cpp's stock path give bit-identical logits (generation loop and
// full forward), the same prompt ids from the two tokenizers, the same
// greedy tokens and text; and SmolLM2 knows the capital of France. The fast
// path keeps the greedy tokens except at near ties.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include <fstream>

#include "engine/session.h"
#include "golden_case.h"

namespace mlx_cpp {
namespace {
namespace fs = std::filesystem;
namespace mx = mlx::core;

const fs::path kGoldens = fs::path(MLX_CPP_GOLDENS) / "real_models";

std::vector<std::string> real_models() {
  std::ifstream stream(kGoldens / "index.json");
  if (!stream) return {};
  return nlohmann::json::parse(stream).get<std::vector<std::string>>();
}

TEST(RealModels, GoldensExistForTheDefaultModel) {
  auto models = real_models();
  EXPECT_NE(std::find(models.begin(), models.end(), "smollm2-135m-instruct"), models.end())
      << "the real-model oracle did not run on the default model";
}

TEST(RealModels, StockPathIsBitExactWithMlxLm) {
  for (const auto& name : real_models()) {
    SCOPED_TRACE(name);
    auto goldens = nlohmann::json::parse(std::ifstream(kGoldens / (name + ".json")));
    auto logits = mx::load_safetensors((kGoldens / (name + ".safetensors")).string()).first;
    auto session = Session::open(goldens["model_dir"].get<std::string>(), {0, KernelMode::stock});
    for (const auto& [key, prompt] : goldens["prompts"].items()) {
      SCOPED_TRACE(key);
      auto ids = session->encode(prompt["text"], true);
      ASSERT_EQ(ids, prompt["ids"].get<std::vector<int>>()) << "tokenizers disagree";
      std::vector<mx::array> observed;
      std::vector<int> tokens;
      auto caches = session->model().make_caches();
      GenerationOptions options;
      options.max_tokens = static_cast<int>(prompt["greedy"].size());
      generate_tokens(
          session->model(), caches, ids, options, {},
          [&](const GeneratedToken& token) {
            tokens.push_back(token.id);
            return true;
          },
          {}, [&](const mx::array& step) { observed.push_back(step); });
      EXPECT_EQ(tokens, prompt["greedy"].get<std::vector<int>>());
      EXPECT_EQ(session->tokenizer().decode(tokens, false), prompt["greedy_text"]);
      EXPECT_EQ(
          testing::compare_exact(mx::concatenate(observed, 0), logits.at(key + ".generation")), "");
      auto fresh = session->model().make_caches();
      auto input = mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32);
      EXPECT_EQ(testing::compare_exact(mx::squeeze(session->model().forward(input, fresh), 0),
                                       logits.at(key + ".forward")),
                "");
    }
  }
}

TEST(RealModels, DefaultModelKnowsTheCapitalOfFranceOnBothPaths) {
  auto goldens = nlohmann::json::parse(std::ifstream(kGoldens / "smollm2-135m-instruct.json"));
  for (auto kernels : {KernelMode::stock, KernelMode::fast}) {
    auto session = Session::open(goldens["model_dir"].get<std::string>(), {0, kernels});
    TextRequest request;
    request.prompt_ids = session->encode("The capital of France is", true);
    request.options.max_tokens = 8;
    auto result = session->generate(request, [](const TextChunk&) { return true; });
    EXPECT_NE(result.text.find("Paris"), std::string::npos) << result.text;
  }
}

}  // namespace
}  // namespace mlx_cpp
