#include "engine/training/lora_trainer.h"

#include <mlx/io.h>
#include <mlx/memory.h>
#include <mlx/ops.h>
#include <mlx/random.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/training/numpy_random.h"
#include "engine/training/training_data.h"
#include "io/durable_file.h"
#include "io/error.h"
#include "io/json_file.h"
#include "io/safetensors_file.h"
#include "model/layers.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

using Clock = std::chrono::steady_clock;

struct TrainableSite {
  int site = 0;
  std::string module;
  int layer = -1;
  int in = 0, out = 0;
};

// mlx-lm converts a block's modules in the order Module.named_modules
// visits them (a stack over children in declaration order: the last
// declared first); for llama-style blocks that is this order.
int conversion_rank(const std::string& relative) {
  static const std::vector<std::string> order = {
      "mlp.up_proj",      "mlp.down_proj",    "mlp.gate_proj",   "self_attn.o_proj",
      "self_attn.v_proj", "self_attn.k_proj", "self_attn.q_proj"};
  auto found = std::find(order.begin(), order.end(), relative);
  return found == order.end() ? static_cast<int>(order.size()) : int(found - order.begin());
}

std::string relative_name(const std::string& module, int layer) {
  const auto prefix = "model.layers." + std::to_string(layer) + ".";
  return module.rfind(prefix, 0) == 0 ? module.substr(prefix.size()) : module;
}

// The projections mlx-lm's linear_to_lora_layers would adapt, in the order
// it creates them.
std::vector<TrainableSite> trainable_sites(const LanguageModel& model,
                                           const LoraTrainingOptions& options) {
  const auto& sites = model.adapter_sites();
  int depth = 0;
  for (int site = 0; site < sites.size(); ++site) depth = std::max(depth, sites[site].layer + 1);
  if (options.num_layers > depth)
    throw Error("requested to train " + std::to_string(options.num_layers) +
                " layers but the model only has " + std::to_string(depth));
  const int first = options.num_layers <= 0 ? 0 : depth - options.num_layers;
  auto listed = [&](const std::string& key) {
    return !options.keys ||
           std::find(options.keys->begin(), options.keys->end(), key) != options.keys->end();
  };
  std::vector<TrainableSite> chosen;
  for (int site = 0; site < sites.size(); ++site) {
    const auto& entry = sites[site];
    if (!entry.linear) continue;
    const bool in_block = entry.layer >= first;
    const bool top_level = entry.layer < 0 && options.keys && listed(entry.module);
    if (!(in_block && listed(relative_name(entry.module, entry.layer))) && !top_level) continue;
    chosen.push_back(
        {site, entry.module, entry.layer, entry.linear->input_dims(), entry.linear->output_dims()});
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) {
    const int layer_a = a.layer < 0 ? INT32_MAX : a.layer,
              layer_b = b.layer < 0 ? INT32_MAX : b.layer;
    if (layer_a != layer_b) return layer_a < layer_b;
    return conversion_rank(relative_name(a.module, a.layer)) <
           conversion_rank(relative_name(b.module, b.layer));
  });
  if (chosen.empty()) throw Error("no projection of this model matches the adapter's keys");
  return chosen;
}

// lora_a as LoRALinear draws it, after the draw of the nn.Linear its
// constructor makes first (never used, but it advances the generator).
std::vector<mx::array> initial_factors(const std::vector<TrainableSite>& sites, int rank) {
  std::vector<mx::array> params;
  for (const auto& site : sites) {
    const double linear_bound = std::sqrt(1.0 / site.in), lora_bound = 1.0 / std::sqrt(site.in);
    mx::random::uniform(mx::array(float(-linear_bound)), mx::array(float(linear_bound)),
                        {site.out, site.in}, mx::float32);
    params.push_back(mx::random::uniform(
        mx::array(float(-lora_bound)), mx::array(float(lora_bound)), {site.in, rank}, mx::float32));
    params.push_back(mx::zeros({rank, site.out}, mx::float32));
  }
  return params;
}

// The factors of an adapter file in place of params' (a pair per site);
// those it lacks stay as they are (mlx-lm loads without strict), unless
// `complete` asks for every one.
void load_resumed(const std::vector<TrainableSite>& sites, const std::filesystem::path& file,
                  std::vector<mx::array>& params, bool complete = false) {
  // lora_a is [in, rank] and lora_b [rank, out]: each factor's fixed side.
  struct Factor {
    const char* leaf;
    int slot, fixed_axis;
    int TrainableSite::*fixed_size;
  };
  static constexpr Factor kFactors[] = {{".lora_a", 0, 0, &TrainableSite::in},
                                        {".lora_b", 1, 1, &TrainableSite::out}};
  auto saved = load_safetensors_checked(file);
  for (std::size_t i = 0; i < sites.size(); ++i)
    for (const auto& factor : kFactors) {
      const auto name = sites[i].module + factor.leaf;
      auto found = saved.find(name);
      if (found == saved.end()) {
        if (complete) throw Error("lora: " + file.string() + " has no " + name);
        continue;
      }
      auto& param = params[2 * i + factor.slot];
      const auto& tensor = found->second;
      const bool shaped =
          tensor.ndim() == 2 && tensor.shape(factor.fixed_axis) == sites[i].*factor.fixed_size;
      if (!shaped || (!complete && tensor.shape() != param.shape()))
        throw Error("lora: " + name + " in " + file.string() +
                    " does not have the adapter's shape");
      param = tensor;
    }
}

// dropout: LoRALinear's, drawn in the forward (training); 0 to evaluate.
std::shared_ptr<const AdapterStack> stack_of(const LanguageModel& model,
                                             const std::vector<TrainableSite>& sites,
                                             const std::vector<mx::array>& params, float scale,
                                             double dropout = 0.0) {
  auto adapter = std::make_shared<BoundAdapter>();
  adapter->name = "training";
  adapter->fine_tune_type = "lora";
  adapter->by_site.resize(model.adapter_sites().size());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    LowRankUpdate update{params[2 * i], params[2 * i + 1], scale};
    update.dropout = dropout;
    adapter->by_site[sites[i].site] = std::move(update);
  }
  return std::make_shared<AdapterStack>(std::vector<AdapterStack::Entry>{{adapter, 1.0f}});
}

// mlx-lm's grad_checkpoint: each block runs inside mx::checkpoint, with
// the factors of its own projections as the checkpoint's inputs (a
// checkpoint passes gradients only to its inputs, as mlx-lm passes the
// layer's trainable parameters).
LanguageModel::TrainingBlockRunner checkpointed_blocks(const LanguageModel& model,
                                                       const std::vector<TrainableSite>& sites,
                                                       const std::vector<mx::array>& params,
                                                       float scale, double dropout) {
  // Everything by value: the backward pass calls the block again, after
  // the forward has returned.
  return [&model, sites, params, scale, dropout](
             int layer, const mx::array& hidden,
             const LanguageModel::TrainingBlock& block) -> mx::array {
    std::vector<std::size_t> own;  // indices into params of this block's factors
    for (std::size_t i = 0; i < sites.size(); ++i)
      if (sites[i].layer == layer) own.insert(own.end(), {2 * i, 2 * i + 1});
    auto run = [&model, sites, params, scale, dropout, own,
                block](const std::vector<mx::array>& inputs) -> std::vector<mx::array> {
      auto factors = params;
      for (std::size_t j = 0; j < own.size(); ++j) factors[own[j]] = inputs[1 + j];
      const auto stack = stack_of(model, sites, factors, scale, dropout);
      return {block(inputs[0], stack.get())};
    };
    std::vector<mx::array> inputs{hidden};
    for (auto index : own) inputs.push_back(params[index]);
    return mx::checkpoint(run)(inputs)[0];
  };
}

// One batch's loss and what it is averaged over: {loss, weight, scored
// tokens}. sft: mlx-lm's default_loss, the cross entropy of each next
// token scored from the row's offset to its length, averaged over the
// scored tokens (the weight). dpo, orpo: preference_loss over the batch's
// pairs (the weight); DPO's reference is the model with `reference` (null:
// the base model).
std::vector<mx::array> batch_loss(const LanguageModel& model, const AdapterStack& stack,
                                  const TrainingBatch& batch, const LoraTrainingOptions& options,
                                  const AdapterStack* reference_stack,
                                  const LanguageModel::TrainingBlockRunner& run_block = {}) {
  const int width = batch.tokens.shape(1);
  auto inputs = mx::slice(batch.tokens, {0, 0}, {batch.tokens.shape(0), width - 1});
  auto targets = mx::slice(batch.tokens, {0, 1}, {batch.tokens.shape(0), width});
  auto logits = model.training_forward(inputs, &stack, run_block);
  auto steps = mx::arange(1, targets.shape(1) + 1);
  auto lengths = batch.lengths;
  auto mask =
      mx::logical_and(mx::greater_equal(steps, mx::slice(lengths, {0, 0}, {lengths.shape(0), 1})),
                      mx::less_equal(steps, mx::slice(lengths, {0, 1}, {lengths.shape(0), 2})));
  if (options.mode != TrainingMode::sft) {
    std::optional<AnswerLogProbs> reference;
    if (options.mode == TrainingMode::dpo) {
      reference = answer_log_probs(
          mx::stop_gradient(model.training_forward(inputs, reference_stack)), targets, mask);
    }
    auto loss = preference_loss(options.mode, options.beta, answer_log_probs(logits, targets, mask),
                                reference);
    const auto pairs = mx::array(static_cast<float>(batch.tokens.shape(0) / 2));
    return {loss, pairs, mx::sum(mask)};
  }
  // mlx.nn.losses.cross_entropy on the CPU.
  logits = mx::subtract(logits, mx::stop_gradient(mx::max(logits, -1, /*keepdims=*/true)));
  auto score = mx::squeeze(mx::take_along_axis(logits, mx::expand_dims(targets, -1), -1), -1);
  auto cross_entropy = mx::multiply(mx::subtract(mx::logsumexp(logits, -1), score), mask);
  auto tokens = mx::sum(mask);
  return {mx::divide(mx::sum(mx::astype(cross_entropy, mx::float32)), tokens), tokens, tokens};
}

// The split's examples: pairs (chosen, rejected) in a preference mode.
std::optional<std::vector<TrainingExample>> load_split(const ModelRuntime& runtime,
                                                       const LoraTrainingOptions& options,
                                                       const std::string& split) {
  if (options.mode != TrainingMode::sft) return load_preference_split(runtime, options.data, split);
  return load_training_split(runtime, options.data, split, options.mask_prompt);
}

// Rows a batch holds: a pair per example in a preference mode.
int batch_rows(const LoraTrainingOptions& options) {
  return options.mode == TrainingMode::sft ? options.batch_size : 2 * options.batch_size;
}

// mlx-lm's evaluate: the loss over up to `batches` batches (-1: all),
// weighted by their scored tokens (preference modes: by their pairs).
double mean_loss(const LanguageModel& model, const std::vector<TrainingExample>& examples,
                 const LoraTrainingOptions& options, int batches, NumpyRandom& numpy,
                 const AdapterStack& stack, const AdapterStack* reference) {
  TrainingBatches source(examples, batch_rows(options), options.max_seq_length, numpy, false);
  mx::array total = mx::array(0.0f), weights = mx::array(0);
  for (int n = 0; batches < 0 || n < batches; ++n) {
    auto batch = source.next();
    if (!batch) break;
    auto values = batch_loss(model, stack, *batch, options, reference);
    total = mx::add(total, mx::multiply(values[0], values[1]));
    weights = mx::add(weights, values[1]);
    mx::eval(total, weights);
  }
  return mx::divide(total, weights).item<float>();
}

// mlx.optimizers.Adam (bias_correction off) and AdamW, one parameter.
struct AdamState {
  mx::array m, v;
};
mx::array adam_update(const LoraTrainingOptions& options, const mx::array& learning_rate,
                      const mx::array& gradient, mx::array parameter, AdamState& state) {
  constexpr double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const auto dtype = gradient.dtype();
  auto lr = mx::astype(learning_rate, dtype);
  if (options.optimizer == "adamw")
    parameter = mx::multiply(
        parameter, mx::subtract(mx::array(1.0f, dtype),
                                mx::multiply(lr, mx::array(options.weight_decay, dtype))));
  auto scalar = [&](double value) { return mx::array(static_cast<float>(value), dtype); };
  state.m =
      mx::add(mx::multiply(scalar(beta1), state.m), mx::multiply(scalar(1.0 - beta1), gradient));
  state.v = mx::add(mx::multiply(scalar(beta2), state.v),
                    mx::multiply(scalar(1.0 - beta2), mx::square(gradient)));
  return mx::subtract(
      parameter, mx::divide(mx::multiply(lr, state.m), mx::add(mx::sqrt(state.v), scalar(eps))));
}

void write_adapter(const std::filesystem::path& file, const std::vector<TrainableSite>& sites,
                   const std::vector<mx::array>& params) {
  std::unordered_map<std::string, mx::array> tensors;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    tensors.emplace(sites[i].module + ".lora_a", params[2 * i]);
    tensors.emplace(sites[i].module + ".lora_b", params[2 * i + 1]);
  }
  // Written whole or not at all: an interrupted save leaves the last one.
  write_durably(file, [&](const std::filesystem::path& temporary) {
    mx::save_safetensors(temporary.string(), tensors);
  });
}

nlohmann::json adapter_config(const LoraTrainingOptions& options, const ModelRuntime& runtime) {
  nlohmann::json parameters = {
      {"rank", options.rank}, {"dropout", options.dropout}, {"scale", options.scale}};
  if (options.keys) parameters["keys"] = *options.keys;
  nlohmann::json config = {{"fine_tune_type", "lora"},
                           {"num_layers", options.num_layers},
                           {"lora_parameters", parameters},
                           {"model", runtime.loaded().directory.string()},
                           {"data", options.data.string()},
                           {"seed", options.seed},
                           {"batch_size", options.batch_size},
                           {"iters", options.iters},
                           {"learning_rate", options.learning_rate},
                           {"grad_accumulation_steps", options.grad_accumulation_steps},
                           {"max_seq_length", options.max_seq_length},
                           {"mask_prompt", options.mask_prompt},
                           {"grad_checkpoint", options.grad_checkpoint},
                           {"optimizer", options.optimizer}};
  if (options.lr_schedule) {
    const auto& schedule = *options.lr_schedule;
    config["lr_schedule"] = {{"name", schedule.name}, {"arguments", schedule.arguments}};
    if (schedule.warmup > 0) {
      config["lr_schedule"]["warmup"] = schedule.warmup;
      config["lr_schedule"]["warmup_init"] = schedule.warmup_init;
    }
  }
  if (options.mode != TrainingMode::sft) {
    config["train_mode"] = training_mode_name(options.mode);
    config["beta"] = options.beta;
  }
  return config;
}

void check_options(const LoraTrainingOptions& options) {
  if (options.batch_size < 1 || options.iters < 1 || options.rank < 1 ||
      options.steps_per_report < 1 || options.steps_per_eval < 1 || options.save_every < 1 ||
      options.max_seq_length < 2 || options.grad_accumulation_steps < 1)
    throw Error(
        "lora: batch size, iterations, rank, report/eval/save intervals and gradient "
        "accumulation steps must be at least 1 and max_seq_length at least 2");
  if (options.optimizer != "adam" && options.optimizer != "adamw")
    throw Error("lora: optimizer " + options.optimizer + " is not offered here (adam, adamw)");
  if (!(options.dropout >= 0.0 && options.dropout < 1.0))
    throw Error("lora: dropout must be in [0, 1)");
  if (options.lr_schedule) check_schedule(*options.lr_schedule);
  if (options.mode != TrainingMode::sft && !(options.beta > 0.0f))
    throw Error("lora: beta must be above 0");
}

}  // namespace

TrainingResult train_lora(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                          const std::function<void(const TrainingReport&)>& on_report,
                          const std::function<void(int)>& on_step) {
  check_options(options);
  const auto& model = runtime.model();
  if (runtime.kernels() != KernelMode::stock)
    throw Error("lora: training runs on the stock kernels (load the model with them)");
  if (auto refusal = model.adapter_training_refusal()) throw Error("lora: " + *refusal);
  NumpyRandom numpy(options.seed);  // mlx-lm seeds numpy first (batch order)
  auto train_set = load_split(runtime, options, "train");
  if (!train_set) throw Error("lora: " + (options.data / "train.jsonl").string() + " is missing");
  auto valid_set = load_split(runtime, options, "valid");

  mx::random::seed(options.seed);
  const auto sites = trainable_sites(model, options);
  auto params = initial_factors(sites, options.rank);
  if (options.resume_adapter_file) load_resumed(sites, *options.resume_adapter_file, params);
  mx::eval(params);
  // DPO's reference: the policy the run starts from (the resumed adapter,
  // else the base model), held fixed.
  std::shared_ptr<const AdapterStack> reference;
  if (options.mode == TrainingMode::dpo && options.resume_adapter_file)
    reference = stack_of(model, sites, params, options.scale);
  std::filesystem::create_directories(options.adapter_path);
  write_json_file(options.adapter_path / "adapter_config.json", adapter_config(options, runtime),
                  4);
  const auto adapter_file = options.adapter_path / "adapters.safetensors";

  TrainingBatch current{mx::array(0), mx::array(0)};
  auto loss_of = [&](const std::vector<mx::array>& trainable) {
    LanguageModel::TrainingBlockRunner run_block;
    if (options.grad_checkpoint)
      run_block = checkpointed_blocks(model, sites, trainable, options.scale, options.dropout);
    return batch_loss(model, *stack_of(model, sites, trainable, options.scale, options.dropout),
                      current, options, reference.get(), run_block);
  };
  std::vector<int> argnums(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) argnums[i] = static_cast<int>(i);
  auto value_and_grad = mx::value_and_grad(loss_of, argnums);
  std::vector<AdamState> optimizer_state;
  for (const auto& param : params)
    optimizer_state.push_back({mx::zeros_like(param), mx::zeros_like(param)});

  auto validation_loss = [&]() {
    return mean_loss(model, *valid_set, options, options.val_batches, numpy,
                     *stack_of(model, sites, params, options.scale), reference.get());
  };

  TrainingResult result;
  result.adapter_file = adapter_file;
  TrainingBatches batches(*train_set, batch_rows(options), options.max_seq_length, numpy, true);
  // The optimizer's step count (what a schedule reads), and the gradients
  // summed since its last update.
  long long updates = 0;
  std::vector<mx::array> accumulated;
  auto rate_at = [&](long long step) {
    return options.lr_schedule ? learning_rate_at(*options.lr_schedule, step)
                               : mx::array(options.learning_rate);
  };
  double losses = 0, train_seconds = 0;
  long long report_tokens = 0, trained_tokens = 0;
  int report_steps = 0;
  for (int it = 1; it <= options.iters; ++it) {
    auto batch = batches.next();
    if (valid_set && (it == 1 || it % options.steps_per_eval == 0 || it == options.iters)) {
      const auto start = Clock::now();
      const double loss = validation_loss();
      result.final_validation_loss = loss;
      if (on_report) {
        TrainingReport report{TrainingReport::Kind::validation, it, loss};
        report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        on_report(report);
      }
    }
    const auto start = Clock::now();
    current = *batch;
    auto [values, gradients] = value_and_grad(params);
    // mlx-lm's step: the new gradients plus those held, averaged over the
    // accumulation at an update.
    if (!accumulated.empty())
      for (std::size_t i = 0; i < gradients.size(); ++i)
        gradients[i] = mx::add(gradients[i], accumulated[i]);
    const int accumulation = options.grad_accumulation_steps;
    if (it % accumulation == 0) {
      if (accumulation > 1)
        for (auto& gradient : gradients)
          gradient = mx::divide(gradient, mx::array(static_cast<float>(accumulation)));
      const auto rate = rate_at(updates++);
      for (std::size_t i = 0; i < params.size(); ++i)
        params[i] = adam_update(options, rate, gradients[i], params[i], optimizer_state[i]);
      accumulated.clear();
    } else {
      accumulated = gradients;
    }
    std::vector<mx::array> state = params;
    for (const auto& adam : optimizer_state) state.insert(state.end(), {adam.m, adam.v});
    state.insert(state.end(), accumulated.begin(), accumulated.end());
    state.insert(state.end(), values.begin(), values.end());
    mx::eval(state);
    const double step_loss = values[0].item<float>();
    result.step_losses.push_back(step_loss);
    losses += step_loss;
    report_tokens += mx::astype(values[2], mx::int32).item<int>();
    ++report_steps;
    train_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (on_step) on_step(it);
    if (it % options.steps_per_report == 0 || it == options.iters) {
      trained_tokens += report_tokens;
      if (on_report) {
        TrainingReport report{TrainingReport::Kind::train, it, losses / report_steps};
        // What mlx-lm shows: the rate of the last update (the first's before any).
        report.learning_rate = rate_at(std::max(updates - 1, 0LL)).item<float>();
        report.iterations_per_second = report_steps / train_seconds;
        report.tokens_per_second = report_tokens / train_seconds;
        report.trained_tokens = trained_tokens;
        report.peak_memory_gb = mx::get_peak_memory() / 1e9;
        on_report(report);
      }
      losses = 0;
      report_tokens = 0;
      report_steps = 0;
      train_seconds = 0;
    }
    if (it % options.save_every == 0) {
      char name[64];
      std::snprintf(name, sizeof name, "%07d_adapters.safetensors", it);
      write_adapter(adapter_file, sites, params);
      write_adapter(options.adapter_path / name, sites, params);
      if (on_report) {
        TrainingReport report{TrainingReport::Kind::save, it};
        report.saved = options.adapter_path / name;
        on_report(report);
      }
    }
  }
  write_adapter(adapter_file, sites, params);
  return result;
}

double evaluate_lora(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                     const std::string& split, int batches, const AdapterStack& adapters) {
  auto examples = load_split(runtime, options, split);
  if (!examples)
    throw Error("lora: " + (options.data / (split + ".jsonl")).string() + " is missing");
  NumpyRandom numpy(options.seed);
  std::shared_ptr<const AdapterStack> reference;
  if (options.mode == TrainingMode::dpo && options.resume_adapter_file) {
    const auto sites = trainable_sites(runtime.model(), options);
    std::vector<mx::array> params(2 * sites.size(), mx::array(0.0f));
    load_resumed(sites, *options.resume_adapter_file, params, /*complete=*/true);
    reference = stack_of(runtime.model(), sites, params, options.scale);
  }
  return mean_loss(runtime.model(), *examples, options, batches, numpy, adapters, reference.get());
}

PreferenceScores score_preferences(const ModelRuntime& runtime, const LoraTrainingOptions& options,
                                   const std::string& split, const AdapterStack* adapters) {
  auto examples = load_preference_split(runtime, options.data, split);
  if (!examples)
    throw Error("lora: " + (options.data / (split + ".jsonl")).string() + " is missing");
  const auto& model = runtime.model();
  double sums[2] = {0, 0}, counts[2] = {0, 0};
  int pairs = 0, preferred = 0;
  for (std::size_t i = 0; i + 1 < examples->size(); i += 2) {
    double mean[2];
    for (int side = 0; side < 2; ++side) {
      const auto& example = (*examples)[i + side];
      const int length = std::min<int>(example.tokens.size(), options.max_seq_length);
      const std::vector<int> ids(example.tokens.begin(), example.tokens.begin() + length);
      auto tokens = mx::array(ids.data(), {1, length}, mx::int32);
      auto inputs = mx::slice(tokens, {0, 0}, {1, length - 1});
      auto targets = mx::slice(tokens, {0, 1}, {1, length});
      auto scored = mx::greater_equal(mx::arange(1, length), mx::array(example.offset));
      auto caches = model.make_caches();
      auto values = answer_log_probs(model.forward(inputs, caches, adapters), targets,
                                     mx::reshape(scored, {1, length - 1}));
      mx::eval(values.sums, values.counts);
      const double sum = values.sums.item<float>(), count = values.counts.item<float>();
      sums[side] += sum;
      counts[side] += count;
      mean[side] = count > 0 ? sum / count : 0;
    }
    ++pairs;
    preferred += mean[0] > mean[1];
  }
  PreferenceScores scores;
  scores.chosen = counts[0] > 0 ? sums[0] / counts[0] : 0;
  scores.rejected = counts[1] > 0 ? sums[1] / counts[1] : 0;
  scores.accuracy = pairs > 0 ? double(preferred) / pairs : 0;
  return scores;
}

}  // namespace mlx_cpp
