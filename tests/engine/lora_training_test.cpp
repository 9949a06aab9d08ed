// Training against mlx_lm.lora (oracle: tools/oracle/lora_training_goldens.py):
// on a tiny llama with SmolLM2's tokenizer and chat template, six runs
// (chat records with tools and a masked prompt under Adam; text records
// under AdamW with keys; prompt/completion records resumed from an adapter
// file; a cosine schedule behind a warmup with gradients accumulated over
// two batches; LoRA dropout; LoRA dropout under gradient checkpointing,
// whose recomputed blocks draw their dropout again, as mlx-lm's do) give
// mlx-lm's every step's loss, its validation losses and its saved adapter;
// numpy's batch order is reproduced, and the schedules' rates are
// mlx.optimizers'.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include <fstream>

#include "../model/golden_case.h"
#include "engine/training/lora_trainer.h"
#include "engine/training/numpy_random.h"
#include "io/error.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_exact;

const std::filesystem::path kRoot = std::filesystem::path(MLX_CPP_GOLDENS) / "lora_training";

nlohmann::json goldens_of(const std::string& run) {
  std::ifstream in(kRoot / run / "goldens.json");
  return nlohmann::json::parse(in);
}

LoraTrainingOptions options_of(const nlohmann::json& recorded, const std::filesystem::path& out) {
  LoraTrainingOptions options;
  // The oracle's folders, wherever they were written.
  options.data =
      kRoot / "data" / std::filesystem::path(recorded["data"].get<std::string>()).filename();
  options.adapter_path = out;
  options.num_layers = recorded["num_layers"];
  options.batch_size = recorded["batch_size"];
  options.iters = recorded["iters"];
  options.val_batches = recorded["val_batches"];
  options.steps_per_report = 1;
  options.steps_per_eval = recorded["steps_per_eval"];
  options.save_every = recorded["save_every"];
  options.learning_rate = recorded["learning_rate"].get<float>();
  options.grad_accumulation_steps = recorded.value("grad_accumulation_steps", 1);
  if (recorded.contains("lr_schedule") && recorded["lr_schedule"].is_object()) {
    const auto& given = recorded["lr_schedule"];
    LearningRateSchedule schedule;
    schedule.name = given["name"];
    schedule.arguments = given["arguments"].get<std::vector<double>>();
    schedule.warmup = given.value("warmup", 0);
    schedule.warmup_init = given.value("warmup_init", 0.0);
    options.lr_schedule = schedule;
  }
  options.optimizer = recorded["optimizer"];
  options.mask_prompt = recorded.value("mask_prompt", false);
  options.grad_checkpoint = recorded.value("grad_checkpoint", false);
  options.seed = recorded["seed"];
  const auto& lora = recorded["lora_parameters"];
  options.rank = lora["rank"];
  options.scale = lora["scale"].get<float>();
  options.dropout = lora.value("dropout", 0.0);
  if (lora.contains("keys")) options.keys = lora["keys"].get<std::vector<std::string>>();
  if (recorded.contains("resume_adapter_file") && recorded["resume_adapter_file"].is_string())
    options.resume_adapter_file = kRoot / out.filename().string().substr(5) / "start.safetensors";
  return options;
}

class LoraTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraTraining, LossesAndAdapterAreMlxLms) {
  const auto goldens = goldens_of(GetParam());
  RuntimeOptions runtime_options;
  runtime_options.kernels = KernelMode::stock;
  auto runtime = ModelRuntime::open(kRoot / "model", runtime_options);
  const auto out = std::filesystem::path(::testing::TempDir()) / ("lora_" + GetParam());
  std::filesystem::remove_all(out);
  auto options = options_of(goldens["options"], out);
  std::vector<std::pair<int, double>> validations;
  auto result = train_lora(*runtime, options, [&](const TrainingReport& report) {
    if (report.kind == TrainingReport::Kind::validation)
      validations.emplace_back(report.iteration, report.loss);
  });
  const auto expected = goldens["train_losses"].get<std::vector<double>>();
  ASSERT_EQ(result.step_losses.size(), expected.size());
  for (std::size_t step = 0; step < expected.size(); ++step)
    EXPECT_EQ(result.step_losses[step], expected[step]) << "step " << step + 1;
  std::vector<std::pair<int, double>> expected_validations;
  for (const auto& entry : goldens["valid_losses"])
    expected_validations.emplace_back(entry[0].get<int>(), entry[1].get<double>());
  EXPECT_EQ(validations, expected_validations);
  auto ours = mx::load_safetensors((out / "adapters.safetensors").string()).first;
  auto theirs =
      mx::load_safetensors((kRoot / GetParam() / "adapters" / "adapters.safetensors").string())
          .first;
  ASSERT_EQ(ours.size(), theirs.size());
  for (const auto& [name, tensor] : theirs) {
    ASSERT_TRUE(ours.count(name)) << name;
    EXPECT_EQ(compare_exact(ours.at(name), tensor), "") << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Runs, LoraTraining,
                         ::testing::Values("chat_masked", "text_adamw", "completions", "scheduled",
                                           "dropout", "checkpointed"));

TEST(LearningRateSchedules, RatesAreMlxOptimizers) {
  std::ifstream in(kRoot / "schedules.json");
  ASSERT_TRUE(in);
  const auto cases = nlohmann::json::parse(in);
  ASSERT_EQ(cases.size(), 5u);
  for (const auto& entry : cases) {
    const auto& config = entry["config"];
    SCOPED_TRACE(config.dump());
    LearningRateSchedule schedule;
    schedule.name = config["name"];
    schedule.arguments = config["arguments"].get<std::vector<double>>();
    schedule.warmup = config.value("warmup", 0);
    schedule.warmup_init = config.value("warmup_init", 0.0);
    check_schedule(schedule);
    const auto rates = entry["rates"].get<std::vector<float>>();
    for (std::size_t step = 0; step < rates.size(); ++step)
      EXPECT_EQ(learning_rate_at(schedule, step).item<float>(), rates[step]) << "step " << step;
  }
  LearningRateSchedule bad{"cosine_decay", {1e-3}};
  EXPECT_THROW(check_schedule(bad), Error);
  bad = {"warmup_cosine", {1e-3, 10}};
  EXPECT_THROW(check_schedule(bad), Error);
  bad = {"linear_schedule", {1e-3, 0, 2.5}};
  EXPECT_THROW(check_schedule(bad), Error);
}

TEST(NumpyRandom, PermutationsAreNumpys) {
  // np.random.seed(3); [np.random.permutation(n).tolist() for n in (5, 1, 12)]
  NumpyRandom random(3);
  EXPECT_EQ(random.permutation(5), (std::vector<int>{3, 4, 1, 0, 2}));
  EXPECT_EQ(random.permutation(1), (std::vector<int>{0}));
  EXPECT_EQ(random.permutation(12), (std::vector<int>{7, 9, 4, 1, 6, 2, 3, 10, 5, 0, 11, 8}));
}

}  // namespace
}  // namespace mlx_cpp
