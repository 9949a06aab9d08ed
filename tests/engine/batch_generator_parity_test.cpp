// The batched stock path against mlx-lm's own BatchGenerator (goldens of
// tools/oracle/batch_goldens.py): the same staggered scenario (five prompts
// at once around gemma3's 16-token window, prompts prefilled in 16-token
// chunks two at a time, at most four rows decoding, rows leaving at their
// max_tokens and a sixth joining at the fourth step) gives every row the
// same tokens, delivered at the same step, and every logprob bit for bit.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include <fstream>

#include "../model/golden_case.h"
#include "engine/scheduler.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

const std::filesystem::path kGoldens = std::filesystem::path(MLX_CPP_GOLDENS) / "batch_goldens";

// The cases the oracle writes: every architecture x {bf16, q4} (named
// here, as tests are listed before the oracle runs), but gemma2, which
// mlx-lm's BatchGenerator cannot run (batch_goldens.py says why).
std::vector<std::string> batch_cases() {
  std::vector<std::string> names;
  for (const char* arch : {"llama",       "llama_untied", "qwen2",      "qwen3",
                           "gemma3_text", "gemma",        "helium",     "smollm3",
                           "exaone",      "ernie4_5",     "seed_oss",   "mimo",
                           "granite",     "minicpm",      "olmo2",      "olmo3",
                           "exaone4",     "glm4",         "starcoder2", "nemotron",
                           "cohere",      "cohere2",      "stablelm",   "phi",
                           "phi3",        "internlm2",    "internlm3",  "hunyuan_v1_dense",
                           "ministral3",  "apertus"})
    for (const char* quant : {"bf16", "q4"}) names.push_back(std::string(arch) + "_" + quant);
  for (const auto& arch : testing::moe_architectures())
    for (const char* quant : {"f32", "q4"}) names.push_back(arch + "_" + quant);
  for (const auto& arch : testing::hybrid_architectures())
    for (const auto& quant : {testing::unquantized_case(arch), std::string("q4")})
      names.push_back(arch + "_" + quant);
  for (const auto& arch : testing::dedicated_architectures())
    for (const auto& quant : {testing::unquantized_case(arch), std::string("q4")})
      names.push_back(arch + "_" + quant);
  return names;
}

TEST(BatchGeneratorParity, TheOracleWroteEveryCase) {
  auto manifest = nlohmann::json::parse(std::ifstream(kGoldens / "manifest.json"));
  EXPECT_EQ(manifest["cases"].get<std::vector<std::string>>(), batch_cases());
}

class BatchGeneratorParity : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchGeneratorParity, StaggeredScenarioIsBitExact) {
  const auto directory = kGoldens / GetParam();
  auto goldens = nlohmann::json::parse(std::ifstream(directory / "goldens.json"));
  auto arrays = mx::load_safetensors((directory / "logits.safetensors").string()).first;
  auto runtime = ModelRuntime::for_token_ids(load_model(directory / "model", {KernelMode::stock}),
                                             {0, KernelMode::stock});
  const auto& scenario = goldens["scenario"];
  SchedulerOptions options;
  options.prefill_batch = scenario["prefill_batch_size"].get<int>();
  // mlx-lm decodes at least a prefill batch's worth of rows.
  options.max_batch = std::max(scenario["completion_batch_size"].get<int>(), options.prefill_batch);
  options.prefill_chunk = scenario["prefill_step_size"].get<int>();
  const int late_uid = static_cast<int>(goldens["rows"].size()) - 1;
  std::vector<testing::ScriptedRequest> requests;
  for (int uid = 0; uid <= late_uid; ++uid) {
    const auto& row = goldens["rows"][std::to_string(uid)];
    testing::ScriptedRequest scripted;
    scripted.request.prompt_ids = row["ids"].get<std::vector<int>>();
    scripted.request.options.max_tokens = row["max_tokens"];
    scripted.submit_at_step = uid == late_uid ? scenario["late_after_calls"].get<int>() : 0;
    requests.push_back(std::move(scripted));
  }
  // Which step delivered each uid's tokens in mlx-lm.
  std::vector<std::vector<int>> expected_steps(requests.size());
  for (const auto& call : goldens["trace"])
    for (const auto& response : call["generation_responses"])
      expected_steps[response["uid"].get<int>()].push_back(call["index"].get<int>());

  const auto traces = testing::run_scripted(*runtime, options, requests);
  for (int uid = 0; uid <= late_uid; ++uid) {
    SCOPED_TRACE("uid " + std::to_string(uid));
    const auto& row = goldens["rows"][std::to_string(uid)];
    const auto& trace = traces[uid];
    EXPECT_EQ(trace.result.completion_ids, row["tokens"].get<std::vector<int>>());
    EXPECT_EQ(trace.result.finish_reason, row["finish_reason"].get<std::string>());
    EXPECT_EQ(trace.delivery_steps, expected_steps[uid]);
    const auto& expected = arrays.at("uid" + std::to_string(uid) + ".logprobs");  // [tokens, vocab]
    ASSERT_EQ(static_cast<int>(trace.logprobs.size()), expected.shape(0));
    for (int t = 0; t < expected.shape(0); ++t) {
      auto golden_row = mx::astype(
          mx::squeeze(mx::slice(expected, {t, 0}, {t + 1, expected.shape(1)}), 0), mx::float32);
      EXPECT_EQ(testing::compare_exact(trace.logprobs[t], golden_row), "") << "token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BatchGeneratorParity, ::testing::ValuesIn(batch_cases()));

}  // namespace
}  // namespace mlx_cpp
