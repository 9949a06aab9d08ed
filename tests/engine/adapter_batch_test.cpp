// Adapters in the scheduler. Rows with different adapters (and rows with
// none, stacked and weighted adapters, DoRA) share batches: every row
// equals the same request run alone, token for token and every logprob
// bit for bit, on both paths. On the stock path a row with an adapter is
// mlx-lm's generate_step with load_adapters applied (its goldens).
#include <gtest/gtest.h>
#include <mlx/ops.h>

#include "../model/golden_case.h"
#include "engine/adapter_registry.h"
#include "engine/scheduler.h"
#include "io/error.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_traces;
using testing::GoldenCase;
using testing::ScriptedRequest;

const std::vector<std::string> kCases = {"llama_bf16",     "llama_q4",    "llama_untied_q4",
                                         "gemma3_text_q4", "phi3_q4",     "mixtral_f32",
                                         "mixtral_q4",     "qwen3_moe_q4"};

struct Fixture {
  std::unique_ptr<ModelRuntime> runtime;
  std::unique_ptr<AdapterRegistry> adapters;
  GoldenCase golden;  // lora_goldens
};

Fixture open(const std::string& name, KernelMode kernels) {
  Fixture fixture;
  fixture.golden = GoldenCase::load(name, "lora_goldens");
  fixture.runtime = ModelRuntime::for_token_ids(
      load_model(GoldenCase::load(name).model_directory, {kernels}), {0, kernels});
  fixture.adapters = std::make_unique<AdapterRegistry>(fixture.runtime->model());
  for (const auto& [adapter, entry] : fixture.golden.goldens["adapters"].items()) {
    if (entry.contains("mlx_lm_error")) continue;
    try {
      fixture.adapters->mount(adapter, fixture.golden.directory / adapter);
    } catch (const Error& error) {
      // DoRA needs weights in MLX's layout: the fast path's interleaved
      // 4-bit weights refuse it, saying so.
      EXPECT_NE(std::string(error.what()).find("--kernels stock"), std::string::npos)
          << error.what();
    }
  }
  return fixture;
}

std::vector<int> prompt_of(int index, int length) {
  std::vector<int> ids;
  for (int i = 0; i < length; ++i) ids.push_back((index * 131 + i * 37 + i * i) % 512);
  return ids;
}

// Twelve requests cycling through the base model, each adapter, a stack
// and a weighted adapter; lengths past gemma's 16-token window and the
// prefill chunk; greedy and seeded; joining at steps 0 to 6.
std::vector<ScriptedRequest> mixed_requests(const AdapterRegistry& registry) {
  std::vector<std::string> stacks = {"", "lora", "lora_keys", "lora*0.5+lora_keys"};
  for (const auto& mounted : registry.list())
    if (mounted.adapter->name == "dora") stacks.push_back("dora");
  std::vector<ScriptedRequest> requests;
  for (int i = 0; i < 12; ++i) {
    ScriptedRequest scripted;
    auto& request = scripted.request;
    request.prompt_ids = prompt_of(i, 5 + (i * 7) % 36);
    request.options.max_tokens = 4 + (i * 5) % 9;
    const auto& stack = stacks[i % stacks.size()];
    if (!stack.empty()) request.options.adapters = registry.resolve(parse_adapter_stack(stack));
    if (i % 3 == 1) {
      request.options.sampler.temperature = 0.8f;
      request.options.sampler.seed = 100 + i;
    }
    scripted.submit_at_step = (i % 3) * 3;
    requests.push_back(std::move(scripted));
  }
  return requests;
}

struct BatchCase {
  std::string name;
  KernelMode kernels;
};

class MixedAdapterBatch : public ::testing::TestWithParam<BatchCase> {};

TEST_P(MixedAdapterBatch, EveryRowEqualsTheRequestAlone) {
  auto fixture = open(GetParam().name, GetParam().kernels);
  SchedulerOptions options;
  options.prefill_chunk = 8;
  const auto requests = mixed_requests(*fixture.adapters);
  const auto alone = testing::run_alone(*fixture.runtime, options, requests);
  options.max_batch = 12;
  options.prefill_batch = 12;
  const auto batched = testing::run_scripted(*fixture.runtime, options, requests);
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(compare_traces(batched[i], alone[i]), "") << "request " << i;
  // The adapters change the answers (else the test would prove little).
  ScriptedRequest base = requests[1];
  base.request.options.adapters = nullptr;
  const auto unadapted = testing::run_alone(*fixture.runtime, options, {base});
  EXPECT_NE(compare_traces(unadapted.front(), alone[1]), "");
}

std::vector<BatchCase> batch_cases() {
  std::vector<BatchCase> cases;
  for (const auto& name : kCases)
    for (auto kernels : {KernelMode::stock, KernelMode::fast}) cases.push_back({name, kernels});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, MixedAdapterBatch, ::testing::ValuesIn(batch_cases()),
                         [](const auto& info) {
                           return info.param.name +
                                  (info.param.kernels == KernelMode::fast ? "_fast" : "_stock");
                         });

class StockAdapterRow : public ::testing::TestWithParam<std::string> {};

// A scheduler row with an adapter on the stock path is mlx-lm's
// generate_step with the adapter loaded.
TEST_P(StockAdapterRow, IsMlxLmWithTheAdapter) {
  auto fixture = open(GetParam(), KernelMode::stock);
  const auto& goldens = fixture.golden.goldens;
  for (const auto& mounted : fixture.adapters->list()) {
    const auto& name = mounted.adapter->name;
    SCOPED_TRACE(name);
    ScriptedRequest scripted;
    scripted.request.prompt_ids = goldens["prompts"]["window"].get<std::vector<int>>();
    const auto greedy = goldens["adapters"][name]["greedy"].get<std::vector<int>>();
    scripted.request.options.max_tokens = static_cast<int>(greedy.size());
    scripted.request.options.adapters = fixture.adapters->resolve({{name, 1.0f}});
    SchedulerOptions options;
    options.max_batch = 1;
    auto trace = testing::run_scripted(*fixture.runtime, options, {scripted}).front();
    EXPECT_EQ(trace.result.completion_ids, greedy);
    const auto& logits = fixture.golden.logits.at(name + ".generation");
    ASSERT_EQ(trace.logprobs.size(), greedy.size());
    for (int step = 0; step < static_cast<int>(greedy.size()); ++step) {
      auto row = mx::slice(logits, {step, 0}, {step + 1, logits.shape(1)});
      auto expected = mx::astype(
          mx::squeeze(mx::subtract(row, mx::logsumexp(row, /*keepdims=*/true)), 0), mx::float32);
      EXPECT_EQ(testing::compare_exact(trace.logprobs[step], expected), "") << "step " << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StockAdapterRow, ::testing::ValuesIn(kCases));

TEST(AdapterStacks, ParseNamesAndWeights) {
  auto choices = parse_adapter_stack("a*0.5+b");
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].name, "a");
  EXPECT_EQ(choices[0].weight, 0.5f);
  EXPECT_EQ(choices[1].name, "b");
  EXPECT_EQ(choices[1].weight, 1.0f);
  for (const char* bad : {"", "a+", "+b", "a*", "a*x", "a*0.5x", "a*nan"})
    EXPECT_THROW(parse_adapter_stack(bad), Error) << bad;
}

TEST(AdapterStacks, RegistryRefusesUnknownDuplicateAndDoraStacks) {
  auto fixture = open("llama_bf16", KernelMode::stock);
  EXPECT_THROW(fixture.adapters->resolve({{"missing", 1.0f}}), Error);
  EXPECT_THROW(fixture.adapters->mount("lora", fixture.golden.directory / "lora"), Error);
  EXPECT_THROW(fixture.adapters->mount("a+b", fixture.golden.directory / "lora"), Error);
  EXPECT_THROW(fixture.adapters->resolve(parse_adapter_stack("dora+lora")), Error);
  EXPECT_THROW(fixture.adapters->resolve(parse_adapter_stack("dora*0.5")), Error);
  // Unmounted while held: the holder keeps it, new requests are refused.
  auto held = fixture.adapters->resolve({{"lora", 1.0f}});
  EXPECT_TRUE(fixture.adapters->unmount("lora"));
  EXPECT_FALSE(fixture.adapters->unmount("lora"));
  EXPECT_THROW(fixture.adapters->resolve({{"lora", 1.0f}}), Error);
  EXPECT_EQ(held->entries().front().adapter->name, "lora");
}

}  // namespace
}  // namespace mlx_cpp
