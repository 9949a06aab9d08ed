// The fused decode step (model/fused_decode_block.h) against the op graph it
// replaces, both on the fast kernels: every logit of every greedy decode
// step bit for bit, across the cache's growth step, after a trim, and on a
// clone that shares the cache's storage.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <random>

#include "golden_case.h"
#include "greedy_run.h"
#include "model/dense_transformer.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

constexpr int kGreedySteps = 64;

LoadedModel load_fast(const std::filesystem::path& directory, bool fused) {
  LoadOptions options;
  options.kernels = KernelMode::fast;
  options.fused_decode = fused;
  return load_model(directory, options);
}

int fused_layers(const LoadedModel& loaded) {
  return dynamic_cast<const DenseTransformer&>(*loaded.model).fused_layer_count();
}

// Layers whose decode step fuses, per case. These keep the op graph:
// dense (bf16) weights, sandwich norms (gemma 2/3, glm4), gemma's exact gelu,
// the scaled residual branches of granite and minicpm, the post-norm blocks
// of olmo2, olmo3 and exaone4, LayerNorms (starcoder2, nemotron, cohere,
// stablelm, phi), parallel blocks, plain MLPs (apertus), q/k norms after
// rope (hunyuan), Llama 4's query scale (ministral3), and llama's layer 1,
// whose v_proj the checkpoint leaves unquantized (the other layers fuse).
int expected_fused_layers(const std::string& name, int layers) {
  for (const char* unfused :
       {"bf16", "gemma", "granite", "minicpm", "olmo", "exaone4", "glm4", "starcoder2", "nemotron",
        "cohere", "stablelm", "hunyuan", "ministral3", "apertus"})
    if (name.find(unfused) != std::string::npos) return 0;
  if (name.rfind("phi_", 0) == 0) return 0;
  // Mixtures of experts run the stock path throughout (dense_transformer.cpp).
  for (const auto& arch : testing::moe_architectures())
    if (name.rfind(arch + "_", 0) == 0) return 0;
  if (name.rfind("llama_q", 0) == 0) return layers - 1;
  // lfm2's attention layers (1 and 3); its convolution layers keep the graph.
  if (name.rfind("lfm2_q", 0) == 0) return layers / 2;
  // qwen3_5's attention has an output gate the fused step does not take;
  // qwen3_next's experts keep it on the stock path anyway.
  if (name.rfind("qwen3_5_", 0) == 0 || name.rfind("qwen3_next_", 0) == 0) return 0;
  return layers;
}

class FusedDecode : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedDecode, GreedyLogitsEqualTheOpGraphBitForBit) {
  auto golden = testing::GoldenCase::load(GetParam());
  auto fused = load_fast(golden.model_directory, true);
  auto graph = load_fast(golden.model_directory, false);
  const int layers = dynamic_cast<const DenseTransformer&>(*fused.model).spec().num_layers;
  EXPECT_EQ(fused_layers(fused), expected_fused_layers(GetParam(), layers));
  EXPECT_EQ(fused_layers(graph), 0);
  for (const auto& [name, prompt] : golden.goldens["prompts"].items()) {
    SCOPED_TRACE("prompt " + name);
    auto ids = prompt["ids"].get<std::vector<int>>();
    auto expected = testing::greedy_run(graph, ids, kGreedySteps);
    auto actual = testing::greedy_run(fused, ids, kGreedySteps);
    ASSERT_EQ(actual.tokens, expected.tokens);
    for (size_t step = 0; step < expected.logits.size(); ++step)
      ASSERT_EQ(testing::compare_exact(actual.logits[step], expected.logits[step]), "")
          << "decode step " << step;
  }
}

// The fused step is the generic graph's.
INSTANTIATE_TEST_SUITE_P(AllArchitectures, FusedDecode,
                         ::testing::ValuesIn(testing::generic_model_golden_cases()),
                         [](const auto& info) { return info.param; });

// One model run on its own caches, token by token.
struct Decoder {
  const LanguageModel& model;
  CacheList caches;

  mx::array step(int token) {
    auto input = mx::array(&token, {1, 1}, mx::int32);
    auto logits = model.forward(input, caches);
    mx::eval(logits);
    return logits;
  }
  void prefill(const std::vector<int>& ids) {
    auto input = mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32);
    mx::eval(model.forward(input, caches));
  }
  void trim(int n) {
    for (auto& cache : caches) cache->trim(n);
  }
  Decoder clone() const {
    Decoder copy{model, {}};
    for (const auto& cache : caches) copy.caches.push_back(cache->clone());
    return copy;
  }
};

std::vector<int> random_ids(int count, int vocab, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> id(0, vocab - 1);
  std::vector<int> ids(count);
  for (auto& value : ids) value = id(random);
  return ids;
}

TEST(FusedDecodeCache, GrowthTrimAndClonesMatchTheOpGraph) {
  auto golden = testing::GoldenCase::load("qwen3_q4");
  auto fused_model = load_fast(golden.model_directory, true);
  auto graph_model = load_fast(golden.model_directory, false);
  ASSERT_GT(fused_layers(fused_model), 0);
  const int vocab = fused_model.model->vocab_size();
  Decoder fused{*fused_model.model, fused_model.model->make_caches()};
  Decoder graph{*graph_model.model, graph_model.model->make_caches()};
  auto expect_same_step = [&](Decoder& a, Decoder& b, int token, const std::string& where) {
    ASSERT_EQ(testing::compare_exact(a.step(token), b.step(token)), "") << where;
  };

  // 250 prompt tokens, then 12 steps: the storage grows past 256 mid-decode.
  const auto prompt = random_ids(250, vocab, 1);
  fused.prefill(prompt);
  graph.prefill(prompt);
  const auto steps = random_ids(12, vocab, 2);
  for (int token : steps) expect_same_step(fused, graph, token, "across the growth step");

  // After a trim, new tokens overwrite the dropped positions.
  fused.trim(5);
  graph.trim(5);
  for (int token : random_ids(3, vocab, 3)) expect_same_step(fused, graph, token, "after a trim");

  // A clone shares the storage: its steps after a trim write positions the
  // original still reads, so they must go to a copy.
  auto clone = fused.clone();
  clone.trim(3);
  for (int token : random_ids(3, vocab, 4)) clone.step(token);
  for (int token : random_ids(2, vocab, 5))
    expect_same_step(fused, graph, token, "after a clone's steps");
}

}  // namespace
}  // namespace mlx_cpp
