#pragma once
// Fine-tunes a LoRA adapter as mlx_lm.lora does, on MLX's autograd: the
// adapted projections (the last num_layers blocks, every projection or the
// keys given) get lora_a drawn as mlx-lm draws it and lora_b zero, the
// loss is mlx-lm's masked cross entropy over each batch's scored tokens,
// the gradients of the adapter's factors alone (summed over
// grad_accumulation_steps batches, then averaged) update them with Adam (or
// AdamW) at a fixed rate or on mlx-lm's schedules, and the adapter is
// written in mlx-lm's directory format (so mlx_lm loads what this trains,
// and the reverse with --resume). LoRA's dropout is drawn as mlx-lm draws
// it. Preference modes (dpo, orpo: preference_loss.h) train on pairs of
// answers instead of mlx-lm's cross entropy.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runtime.h"
#include "engine/training/learning_rate_schedule.h"
#include "engine/training/preference_loss.h"

namespace mlx_cpp {

// mlx_lm.lora's options and defaults.
struct LoraTrainingOptions {
  std::filesystem::path data;  // DIR with train.jsonl, valid.jsonl
  std::filesystem::path adapter_path = "adapters";
  int num_layers = 16;
  int batch_size = 4;
  int iters = 1000;
  int val_batches = 25;  // -1: the whole validation set
  int steps_per_report = 10;
  int steps_per_eval = 200;
  int save_every = 100;
  int max_seq_length = 2048;
  float learning_rate = 1e-5f;
  // mlx-lm's lr_schedule; when set it gives the rate and learning_rate is
  // not used (as in mlx-lm).
  std::optional<LearningRateSchedule> lr_schedule;
  int grad_accumulation_steps = 1;
  // mlx-lm's grad_checkpoint: each block's activations are recomputed in
  // the backward pass instead of kept (the same values, less memory).
  bool grad_checkpoint = false;
  int rank = 8;
  float scale = 20.0f;
  double dropout = 0.0;  // a Python float in mlx-lm: 1 - p is taken in double
  std::optional<std::vector<std::string>> keys;
  bool mask_prompt = false;
  std::string optimizer = "adam";  // adam | adamw
  float weight_decay = 0.01f;      // adamw's default
  std::optional<std::filesystem::path> resume_adapter_file;
  std::uint32_t seed = 0;
  // Preference tuning: records {"prompt", "chosen", "rejected"}, DPO
  // against the model without the adapter, or ORPO; beta weighs the
  // preference term.
  TrainingMode mode = TrainingMode::sft;
  float beta = 0.1f;
};

struct TrainingReport {
  enum class Kind { train, validation, save } kind = Kind::train;
  int iteration = 0;
  double loss = 0;  // train: mean over the report's steps; validation
  double learning_rate = 0;
  double iterations_per_second = 0;
  double tokens_per_second = 0;
  long long trained_tokens = 0;
  double peak_memory_gb = 0;
  double seconds = 0;           // validation: how long it took
  std::filesystem::path saved;  // save: the checkpoint file
};

struct TrainingResult {
  std::vector<double> step_losses;  // every step's loss, in order
  std::optional<double> final_validation_loss;
  std::filesystem::path adapter_file;
};

// Trains on runtime's model (loaded with stock kernels: the fast path's
// kernels are not differentiated). Throws Error for data or options it
// cannot use, naming them. on_report is called at each report, validation
// and save; on_step after each step (a progress bar).
TrainingResult train_lora(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                          const std::function<void(const TrainingReport&)>& on_report = {},
                          const std::function<void(int)>& on_step = {});

// The mean loss of `split` (e.g. "test") with `adapters`, over up to
// `batches` batches (-1: all), as mlx_lm.lora --test computes it (in a
// preference mode: that mode's loss, averaged over the pairs).
double evaluate_lora(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                     const std::string& split, int batches, const AdapterStack& adapters);

// Over a split of preference records: the mean log-probability per token of
// the chosen answers and of the rejected ones, with `adapters` (null: the
// base model), and the share of pairs whose chosen answer is the likelier
// per token.
struct PreferenceScores {
  double chosen = 0, rejected = 0, accuracy = 0;
};
PreferenceScores score_preferences(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                                   const std::string& split, const AdapterStack* adapters);

}  // namespace mlx_cpp
