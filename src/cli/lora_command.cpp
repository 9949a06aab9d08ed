// mlx-cpp lora: fine-tunes a LoRA adapter with mlx_lm.lora's flags, data
// formats, defaults and adapter output (engine/training/lora_trainer.h).
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/adapter_registry.h"
#include "engine/training/lora_trainer.h"
#include "io/error.h"

namespace mlx_cpp::cli {
namespace {

struct LoraArguments {
  std::string model = kDefaultModel;
  LoraTrainingOptions options;
  std::string data, adapter_path = "adapters", resume;
  std::vector<std::string> keys;
  bool train = false, test = false;
  int test_batches = 500;
  std::string mode = "sft";
  LearningRateSchedule schedule;
};

void print_report(const TrainingReport& report) {
  using Kind = TrainingReport::Kind;
  if (report.kind == Kind::validation)
    std::printf("Iter %d: Val loss %.3f, Val took %.3fs\n", report.iteration, report.loss,
                report.seconds);
  else if (report.kind == Kind::save)
    std::printf("Iter %d: Saved adapter weights to %s\n", report.iteration,
                report.saved.string().c_str());
  else
    std::printf(
        "Iter %d: Train loss %.3f, Learning Rate %.3e, It/sec %.3f, Tokens/sec %.3f, Trained "
        "Tokens %lld, Peak mem %.3f GB\n",
        report.iteration, report.loss, report.learning_rate, report.iterations_per_second,
        report.tokens_per_second, report.trained_tokens, report.peak_memory_gb);
  std::fflush(stdout);
}

// A progress bar on stderr when it is a terminal: [####......] it/iters.
void print_progress(int it, int iters) {
  constexpr int kWidth = 30;
  const int done = kWidth * it / iters;
  std::fprintf(stderr, "\r[%s%s] %d/%d", std::string(done, '#').c_str(),
               std::string(kWidth - done, '.').c_str(), it, iters);
  if (it == iters) std::fprintf(stderr, "\n");
}

void run_lora(LoraArguments& args) {
  if (!args.train && !args.test) throw Error("lora: give --train, --test or both");
  auto& options = args.options;
  options.data = args.data;
  options.adapter_path = args.adapter_path;
  if (!args.resume.empty()) options.resume_adapter_file = args.resume;
  if (!args.keys.empty()) options.keys = args.keys;
  options.mode = parse_training_mode(args.mode);
  if (!args.schedule.name.empty()) {
    options.lr_schedule = args.schedule;
  } else if (!args.schedule.arguments.empty() || args.schedule.warmup > 0) {
    throw Error("lora: --lr-schedule-args and --warmup need --lr-schedule");
  }
  RuntimeOptions runtime_options;
  runtime_options.kernels = KernelMode::stock;
  auto runtime = ModelRuntime::open(resolve_model_argument(args.model), runtime_options);
  if (args.train) {
    const bool terminal = isatty(STDERR_FILENO);
    auto result = train_lora(*runtime, options, print_report, [&](int it) {
      if (terminal) print_progress(it, options.iters);
    });
    std::printf("Saved final weights to %s.\n", result.adapter_file.string().c_str());
  }
  if (args.test) {
    // The adapter just trained, or the one at --adapter-path.
    auto adapters = load_adapter_stack(runtime->model(), {options.adapter_path});
    const double loss = evaluate_lora(*runtime, options, "test", args.test_batches, *adapters);
    if (options.mode == TrainingMode::sft) {
      std::printf("Test loss %.3f, Test ppl %.3f.\n", loss, std::exp(loss));
    } else {
      const auto base = score_preferences(*runtime, options, "test", nullptr);
      const auto tuned = score_preferences(*runtime, options, "test", adapters.get());
      std::printf(
          "Test loss %.3f. Log-probability per token, chosen %.3f (base %.3f), rejected %.3f "
          "(base %.3f); chosen likelier in %.0f%% of pairs (base %.0f%%).\n",
          loss, tuned.chosen, base.chosen, tuned.rejected, base.rejected, 100 * tuned.accuracy,
          100 * base.accuracy);
    }
  }
}

}  // namespace

void register_lora_command(CLI::App& app) {
  auto args = std::make_shared<LoraArguments>();
  auto& options = args->options;
  auto* command = app.add_subcommand(
      "lora", "Fine-tune a LoRA adapter (mlx_lm.lora's flags, data and adapter format)");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_flag("--train", args->train, "Train an adapter");
  command->add_flag("--test", args->test,
                    "Report the loss on test.jsonl with the adapter (after training, or the one "
                    "at --adapter-path)");
  command->add_option("--test-batches", args->test_batches, "Test batches (-1: all)")
      ->capture_default_str();
  command->add_option("--data", args->data, "Directory with train.jsonl (and valid.jsonl)")
      ->required();
  command->add_option("--adapter-path", args->adapter_path, "Where the adapter is written")
      ->capture_default_str();
  command->add_option("--iters", options.iters, "Training steps")->capture_default_str();
  command->add_option("--batch-size", options.batch_size, "Examples per step")
      ->capture_default_str();
  command->add_option("--learning-rate", options.learning_rate, "Adam's learning rate")
      ->capture_default_str();
  command->add_option("--optimizer", options.optimizer, "adam or adamw")->capture_default_str();
  command->add_option("--weight-decay", options.weight_decay, "adamw's weight decay")
      ->capture_default_str();
  command->add_option("--num-layers", options.num_layers, "Blocks adapted, from the last")
      ->capture_default_str();
  command->add_option("--rank", options.rank, "LoRA rank")->capture_default_str();
  command->add_option("--scale", options.scale, "LoRA scale (mlx-lm's factor)")
      ->capture_default_str();
  command->add_option("--dropout", options.dropout, "LoRA dropout probability while training")
      ->capture_default_str();
  command
      ->add_option("--grad-accumulation-steps", options.grad_accumulation_steps,
                   "Batches whose gradients make one update")
      ->capture_default_str();
  command->add_flag("--grad-checkpoint", options.grad_checkpoint,
                    "Recompute each block's activations in the backward pass instead of keeping "
                    "them (less memory, about a quarter more time)");
  command->add_option("--lr-schedule", args->schedule.name,
                      "cosine_decay, linear_schedule, exponential_decay or step_decay (mlx-lm's "
                      "lr_schedule; replaces --learning-rate)");
  command->add_option("--lr-schedule-args", args->schedule.arguments,
                      "The schedule's arguments, initial rate first (e.g. 1e-5 1000)");
  command->add_option("--warmup", args->schedule.warmup,
                      "Updates of linear warmup before the schedule");
  command->add_option("--warmup-init", args->schedule.warmup_init, "The warmup's first rate");
  command
      ->add_option("--train-mode", args->mode,
                   "sft (mlx-lm's loss), or dpo / orpo on preference records")
      ->capture_default_str();
  command->add_option("--beta", options.beta, "dpo / orpo: weight of the preference term")
      ->capture_default_str();
  command->add_option("--keys", args->keys,
                      "Projections to adapt within a block, e.g. self_attn.q_proj (default: all)");
  command->add_flag("--mask-prompt", options.mask_prompt,
                    "Score only the completion (the last message)");
  command->add_option("--max-seq-length", options.max_seq_length, "Longer examples are cut")
      ->capture_default_str();
  command->add_option("--val-batches", options.val_batches, "Validation batches (-1: all)")
      ->capture_default_str();
  command->add_option("--steps-per-report", options.steps_per_report, "Steps between reports")
      ->capture_default_str();
  command->add_option("--steps-per-eval", options.steps_per_eval, "Steps between validations")
      ->capture_default_str();
  command->add_option("--save-every", options.save_every, "Steps between saved checkpoints")
      ->capture_default_str();
  command->add_option("--resume-adapter-file", args->resume,
                      "Start from these adapter weights (adapters.safetensors)");
  command->add_option("--seed", options.seed, "Seed of the initial factors and batch order")
      ->capture_default_str();
  command->callback([args] { run_lora(*args); });
}

}  // namespace mlx_cpp::cli
