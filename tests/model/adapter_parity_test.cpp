// The adapter contract with mlx-lm: for every architecture x {bf16, q4},
// a model with an adapter directory applied (LoRA on every projection,
// LoRA on a few projections and the head in bfloat16, DoRA) gives the
// logits of mlx-lm's load(..., adapter_path=...) bit for bit: its
// generation loop's every step, its greedy tokens, and a full forward.
// Fusing writes the tensors mlx_lm.fuse writes, bit for bit.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include "engine/token_generator.h"
#include "golden_case.h"
#include "greedy_run.h"
#include "io/error.h"
#include "model/adapter_files.h"
#include "model/dense_transformer.h"
#include "model/fuse_adapter.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_exact;
using testing::GoldenCase;

std::vector<std::string> adapter_cases() {
  std::vector<std::string> names;
  for (const auto& name : testing::model_golden_cases()) {
    const auto suffix = name.substr(name.rfind('_') + 1);
    if ((suffix == "bf16" || suffix == "f32" || suffix == "q4") && name != "qwen2_q4f32")
      names.push_back(name);
  }
  return names;
}

std::shared_ptr<const AdapterStack> stack_of(const LanguageModel& model,
                                             const std::filesystem::path& directory) {
  auto bound = model.bind_adapter(read_adapter_directory(directory), directory.filename());
  return std::make_shared<AdapterStack>(std::vector<AdapterStack::Entry>{{bound, 1.0f}});
}

// Eight greedy steps with the adapters.
GenerationOptions adapted_options(std::shared_ptr<const AdapterStack> stack,
                                  KernelMode kernels = KernelMode::stock) {
  GenerationOptions options;
  options.max_tokens = 8;
  options.adapters = std::move(stack);
  options.kernels = kernels;
  return options;
}

class AdapterParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden_ = GoldenCase::load(GetParam(), "lora_goldens");
    loaded_ = load_model(GoldenCase::load(GetParam()).model_directory);
  }
  std::vector<int> prompt(const std::string& name) const {
    return golden_.goldens["prompts"][name].get<std::vector<int>>();
  }
  GoldenCase golden_;
  LoadedModel loaded_;
};

TEST_P(AdapterParity, GenerationAndForwardLogitsAreMlxLms) {
  int checked = 0;
  for (const auto& [adapter, entry] : golden_.goldens["adapters"].items()) {
    if (entry.contains("mlx_lm_error")) continue;  // refused there: see the binding tests
    SCOPED_TRACE("adapter " + adapter);
    auto stack = stack_of(*loaded_.model, golden_.directory / adapter);
    auto run = testing::greedy_run(loaded_, prompt("window"), adapted_options(stack));
    EXPECT_EQ(run.tokens, entry["greedy"].get<std::vector<int>>());
    EXPECT_EQ(
        compare_exact(mx::concatenate(run.logits, 0), golden_.logits.at(adapter + ".generation")),
        "");

    auto ids = prompt("short");
    auto fresh = loaded_.model->make_caches();
    auto forward = loaded_.model->forward(
        mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32), fresh, stack.get());
    EXPECT_EQ(compare_exact(mx::squeeze(forward, 0), golden_.logits.at(adapter + ".forward")), "");
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

TEST_P(AdapterParity, WithoutAdaptersTheModelIsUnchanged) {
  // Binding an adapter leaves the shared model as it was.
  auto stack = stack_of(*loaded_.model, golden_.directory / "lora");
  auto ids = prompt("short");
  auto caches = loaded_.model->make_caches();
  auto logits = loaded_.model->forward(
      mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32), caches);
  auto base = GoldenCase::load(GetParam());
  EXPECT_EQ(compare_exact(mx::squeeze(logits, 0), base.logits.at("short.forward")), "");
}

TEST_P(AdapterParity, FuseWritesMlxLmsTensorsAndLogits) {
  int checked = 0;
  for (const auto& [adapter, entry] : golden_.goldens["adapters"].items()) {
    if (!entry.value("fused", false)) continue;
    SCOPED_TRACE("adapter " + adapter);
    const auto out =
        std::filesystem::path(::testing::TempDir()) / ("fused_" + GetParam() + "_" + adapter);
    std::filesystem::remove_all(out);
    auto report = fuse_adapter(GoldenCase::load(GetParam()).model_directory,
                               golden_.directory / adapter, out, /*dequantize=*/false);
    EXPECT_GT(report.fused_projections, 0);
    auto ours = mx::load_safetensors((out / "model.safetensors").string()).first;
    auto theirs =
        mx::load_safetensors((golden_.directory / adapter / "fused" / "model.safetensors").string())
            .first;
    EXPECT_EQ(ours.size(), theirs.size());
    for (const auto& [name, tensor] : theirs) {
      ASSERT_TRUE(ours.count(name)) << name;
      EXPECT_EQ(compare_exact(ours.at(name), tensor), "") << name;
    }
    auto fused = load_model(out);
    auto ids = prompt("short");
    auto caches = fused.model->make_caches();
    auto logits = fused.model->forward(
        mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32), caches);
    EXPECT_EQ(compare_exact(mx::squeeze(logits, 0), golden_.logits.at(adapter + ".fused_forward")),
              "");
    std::filesystem::remove_all(out);
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// The fast path's contract (tests/model/fast_kernels_test.cpp) holds with
// adapters: a full forward within 5% of the largest stock logit, the
// decode steps within 10%, and greedy tokens equal to mlx-lm's except
// after a near tie.
TEST_P(AdapterParity, FastPathWithAdaptersKeepsTheFastContract) {
  constexpr float kForwardBound = 0.05f, kDecodeBound = 0.10f;
  auto fast = load_model(GoldenCase::load(GetParam()).model_directory, {KernelMode::fast});
  for (const auto& [adapter, entry] : golden_.goldens["adapters"].items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("adapter " + adapter);
    std::shared_ptr<const AdapterStack> stack;
    try {
      stack = stack_of(*fast.model, golden_.directory / adapter);
    } catch (const Error& error) {  // DoRA over the fast path's own weight layout
      EXPECT_NE(std::string(error.what()).find("--kernels stock"), std::string::npos);
      continue;
    }
    auto ids = prompt("short");
    auto caches = fast.model->make_caches();
    auto logits = mx::astype(
        mx::squeeze(
            fast.model->forward(mx::array(ids.data(), {1, static_cast<int>(ids.size())}, mx::int32),
                                caches, stack.get()),
            0),
        mx::float32);
    auto expected = mx::astype(golden_.logits.at(adapter + ".forward"), mx::float32);
    const float largest = mx::max(mx::abs(expected)).item<float>();
    EXPECT_LE(mx::max(mx::abs(mx::subtract(logits, expected))).item<float>(),
              kForwardBound * largest);

    auto run =
        testing::greedy_run(fast, prompt("window"), adapted_options(stack, KernelMode::fast));
    const auto& tokens = run.tokens;
    std::vector<mx::array> steps;
    for (const auto& step : run.logits) steps.push_back(mx::astype(step, mx::float32));
    const auto greedy = entry["greedy"].get<std::vector<int>>();
    const auto& reference = golden_.logits.at(adapter + ".generation");
    for (std::size_t step = 0; step < greedy.size() && step < tokens.size(); ++step) {
      auto row = mx::astype(
          mx::slice(reference, {int(step), 0}, {int(step) + 1, reference.shape(1)}), mx::float32);
      const float bound = kDecodeBound * mx::max(mx::abs(row)).item<float>();
      EXPECT_LE(mx::max(mx::abs(mx::subtract(steps[step], row))).item<float>(), bound)
          << "step " << step;
      if (tokens[step] == greedy[step]) continue;
      auto sorted = mx::sort(mx::flatten(row));
      const int n = sorted.size();
      const float gap =
          (mx::slice(sorted, {n - 1}, {n}) - mx::slice(sorted, {n - 2}, {n - 1})).item<float>();
      EXPECT_LE(gap, bound) << "step " << step << ": a token differs without a near tie";
      break;  // past a near tie the two runs continue from different tokens
    }
  }
}

// A decode step run as one fused node adds the adapters' updates exactly
// as the op graph does: every step's logits equal, bit for bit.
TEST_P(AdapterParity, FusedDecodeStepsAddAdaptersAsTheOpGraph) {
  const auto model_directory = GoldenCase::load(GetParam()).model_directory;
  auto fused = load_model(model_directory, {KernelMode::fast, true});
  auto graph = load_model(model_directory, {KernelMode::fast, false});
  auto* dense = dynamic_cast<const DenseTransformer*>(fused.model.get());
  if (!dense || dense->fused_layer_count() == 0) GTEST_SKIP() << "no fused decode step here";
  for (const auto& [adapter, entry] : golden_.goldens["adapters"].items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("adapter " + adapter);
    std::vector<std::vector<mx::array>> runs;
    for (const auto* loaded : {&fused, &graph}) {
      std::shared_ptr<const AdapterStack> stack;
      try {
        stack = stack_of(*loaded->model, golden_.directory / adapter);
      } catch (const Error&) {  // DoRA over the fast path's own layout: see above
        break;
      }
      runs.push_back(
          testing::greedy_run(*loaded, prompt("window"), adapted_options(stack, KernelMode::fast))
              .logits);
    }
    if (runs.size() < 2) continue;
    ASSERT_EQ(runs[0].size(), runs[1].size());
    for (std::size_t step = 0; step < runs[0].size(); ++step)
      EXPECT_EQ(compare_exact(runs[0][step], runs[1][step]), "") << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, AdapterParity, ::testing::ValuesIn(adapter_cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mlx_cpp
