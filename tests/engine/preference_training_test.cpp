// Preference tuning. The losses equal an independent numpy implementation
// of the papers' formulas on fixed logits (oracle:
// tools/oracle/preference_loss_goldens.py). Training with each on a toy
// preference set (the tiny llama of the LoRA training goldens, SmolLM2's
// tokenizer and template) makes the chosen answers likelier and the
// rejected ones less likely than under the base model.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "engine/adapter_registry.h"
#include "engine/training/lora_trainer.h"
#include "engine/training/preference_loss.h"
#include "io/error.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

const std::filesystem::path kLossGoldens =
    std::filesystem::path(MLX_CPP_GOLDENS) / "preference_loss" / "goldens.json";
const std::filesystem::path kTrainingRoot =
    std::filesystem::path(MLX_CPP_GOLDENS) / "lora_training";

mx::array floats(const nlohmann::json& values, const mx::Shape& shape) {
  const auto data = values.get<std::vector<float>>();
  return mx::array(data.data(), shape, mx::float32);
}

TEST(PreferenceLoss, EqualsNumpyOnFixedLogits) {
  std::ifstream in(kLossGoldens);
  ASSERT_TRUE(in) << "missing " << kLossGoldens;
  const auto cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 3u);
  for (const auto& [name, golden] : cases.items()) {
    SCOPED_TRACE(name);
    const auto shape = golden["shape"].get<std::vector<int>>();
    const mx::Shape logits_shape{shape[0], shape[1], shape[2]}, rows_shape{shape[0], shape[1]};
    auto policy = floats(golden["policy"], logits_shape);
    auto reference = floats(golden["reference"], logits_shape);
    const auto target_values = golden["targets"].get<std::vector<int>>();
    auto targets = mx::array(target_values.data(), rows_shape, mx::int32);
    auto mask = mx::greater(floats(golden["mask"], rows_shape), mx::array(0.0f));
    const float beta = golden["beta"].get<float>();
    const auto policy_values = answer_log_probs(policy, targets, mask);
    const auto reference_values = answer_log_probs(reference, targets, mask);
    const double dpo =
        preference_loss(TrainingMode::dpo, beta, policy_values, reference_values).item<float>();
    const double orpo =
        preference_loss(TrainingMode::orpo, beta, policy_values, std::nullopt).item<float>();
    const double want_dpo = golden["dpo"], want_orpo = golden["orpo"];
    EXPECT_NEAR(dpo, want_dpo, 2e-6 * std::max(1.0, std::abs(want_dpo)));
    EXPECT_NEAR(orpo, want_orpo, 2e-6 * std::max(1.0, std::abs(want_orpo)));
  }
}

TEST(PreferenceLoss, DpoNeedsAReference) {
  auto logits = mx::zeros({2, 3, 5});
  auto targets = mx::zeros({2, 3}, mx::int32);
  auto mask = mx::ones({2, 3}, mx::bool_);
  EXPECT_THROW(
      preference_loss(TrainingMode::dpo, 0.1f, answer_log_probs(logits, targets, mask), {}), Error);
  EXPECT_THROW(parse_training_mode("kto"), Error);
}

const std::vector<std::string> kPlaces = {"Paris", "Lima",  "Oslo",  "Cairo", "Hanoi", "Quito",
                                          "Dakar", "Perth", "Riga",  "Sucre", "Baku",  "Bern",
                                          "Doha",  "Lome",  "Accra", "Minsk"};
const std::string kChosen = "Yes, {} is a city.", kRejected = "No idea, sorry.";

std::string answer(std::string text, const std::string& place) {
  if (auto at = text.find("{}"); at != std::string::npos) text.replace(at, 2, place);
  return text;
}

std::string question(const std::string& place) {
  return "Is " + place + " a city?";
}

// A toy set: each prompt asks whether a place is a city; the chosen answer
// is one shape of reply, the rejected another. 8 pairs to train on, 2 to
// validate, 6 held out.
void write_toy_set(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream train(dir / "train.jsonl"), valid(dir / "valid.jsonl"), test(dir / "test.jsonl");
  for (std::size_t i = 0; i < kPlaces.size(); ++i)
    (i < 8    ? train
     : i < 10 ? valid
              : test)
        << nlohmann::json{{"prompt", question(kPlaces[i])},
                          {"chosen", answer(kChosen, kPlaces[i])},
                          {"rejected", answer(kRejected, kPlaces[i])}}
               .dump()
        << "\n";
}

RuntimeOptions stock() {
  RuntimeOptions options;
  options.kernels = KernelMode::stock;
  return options;
}

LoraTrainingOptions toy_options(const std::filesystem::path& data,
                                const std::filesystem::path& adapter) {
  LoraTrainingOptions options;
  options.data = data;
  options.adapter_path = adapter;
  options.iters = 12;
  options.batch_size = 2;
  options.num_layers = 3;
  options.rank = 4;
  options.scale = 10.0f;
  options.learning_rate = 3e-3f;
  options.val_batches = 1;
  options.steps_per_eval = 100;
  options.mask_prompt = true;
  return options;
}

// Preference tuning starts, as it usually does, from a model tuned on
// answers of the task's shape: here both answers of every training pair
// (mlx-lm's loss), so the template's own tokens are learned before the
// preference runs. A random model gives each answer token about −43 nats;
// learning the tokens both answers share would otherwise raise the
// rejected answers too, whatever the preference does.
class PreferenceTraining : public ::testing::TestWithParam<TrainingMode> {
 protected:
  static void SetUpTestSuite() {
    runtime_ = ModelRuntime::open(kTrainingRoot / "model", stock()).release();
    // A folder of this process's own: CTest runs each mode in a process
    // of its own, perhaps at the same time.
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("preference_training_" + std::to_string(getpid()));
    std::filesystem::remove_all(root_);
    write_toy_set(root_ / "pairs");
    std::filesystem::create_directories(root_ / "answers");
    std::ofstream answers(root_ / "answers" / "train.jsonl");
    for (std::size_t i = 0; i < 8; ++i)
      for (const auto& shape : {kChosen, kRejected})
        answers << nlohmann::json{{"prompt", question(kPlaces[i])},
                                  {"completion", answer(shape, kPlaces[i])}}
                       .dump()
                << "\n";
    answers.close();
    train_lora(*runtime_, toy_options(root_ / "answers", root_ / "warm"));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(root_);
    delete runtime_;
    runtime_ = nullptr;
  }
  static ModelRuntime* runtime_;
  static std::filesystem::path root_;
};
ModelRuntime* PreferenceTraining::runtime_ = nullptr;
std::filesystem::path PreferenceTraining::root_;

TEST_P(PreferenceTraining, ChosenRiseAndRejectedFall) {
  const auto mode = training_mode_name(GetParam());
  auto options = toy_options(root_ / "pairs", root_ / mode);
  options.mode = GetParam();
  // DPO's summed log-probabilities move fast: a small beta and rate keep it
  // from driving both answers down (measured: beta 0.5 at 1e-3 zeroes the
  // loss in one step and the chosen answers fall with the rejected).
  const bool dpo = GetParam() == TrainingMode::dpo;
  options.beta = dpo ? 0.05f : 0.5f;
  options.learning_rate = dpo ? 1e-4f : 3e-4f;
  options.resume_adapter_file = root_ / "warm" / "adapters.safetensors";
  const auto result = train_lora(*runtime_, options);
  ASSERT_EQ(result.step_losses.size(), 12u);
  EXPECT_LT(result.step_losses.back(), result.step_losses.front());

  auto warm = load_adapter_stack(runtime_->model(), {root_ / "warm"});
  auto tuned = load_adapter_stack(runtime_->model(), {options.adapter_path});
  const auto before = score_preferences(*runtime_, options, "test", warm.get());
  const auto after = score_preferences(*runtime_, options, "test", tuned.get());
  // Held-out pairs: the preference generalizes over the place's name.
  EXPECT_GT(after.chosen, before.chosen + 0.05)
      << "chosen " << before.chosen << " -> " << after.chosen;
  EXPECT_LT(after.rejected, before.rejected - 0.05)
      << "rejected " << before.rejected << " -> " << after.rejected;
  // The warm start prefers the shorter, rejected answer in every pair; the
  // preference turns that round.
  EXPECT_EQ(before.accuracy, 0.0);
  EXPECT_GE(after.accuracy, 5.0 / 6.0);
  // The adapter's config says how it was trained.
  std::ifstream config(options.adapter_path / "adapter_config.json");
  EXPECT_EQ(nlohmann::json::parse(config)["train_mode"], mode);
}

INSTANTIATE_TEST_SUITE_P(Modes, PreferenceTraining,
                         ::testing::Values(TrainingMode::dpo, TrainingMode::orpo),
                         [](const auto& info) { return training_mode_name(info.param); });

TEST(PreferenceTraining, RecordsOfTheWrongKindAreRefusedByName) {
  auto runtime = ModelRuntime::open(kTrainingRoot / "model", stock());
  const auto dir = std::filesystem::path(::testing::TempDir()) / "preference_refusals";
  std::filesystem::remove_all(dir);
  write_toy_set(dir);
  LoraTrainingOptions options;
  options.data = dir;
  options.adapter_path = dir / "adapter";
  options.iters = 1;
  auto message = [&]() -> std::string {
    try {
      train_lora(*runtime, options);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  // Preference records under mlx-lm's loss: the message names the modes.
  EXPECT_NE(message().find("--train-mode dpo or orpo"), std::string::npos);
  options.mode = TrainingMode::orpo;
  options.beta = 0.0f;
  EXPECT_NE(message().find("beta"), std::string::npos);
  // Completion records in a preference mode: the missing field is named.
  options.beta = 0.1f;
  std::ofstream(dir / "train.jsonl") << R"({"prompt": "a", "completion": "b"})"
                                     << "\n";
  EXPECT_NE(message().find("\"chosen\""), std::string::npos);
}

}  // namespace
}  // namespace mlx_cpp
