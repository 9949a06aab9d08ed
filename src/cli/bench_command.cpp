// mlx-cpp bench: prefill and decode speed with the definitions of
// mlx_lm.benchmark and llama-bench: a random prompt (seed 0) of -p tokens,
// -g generated tokens with EOS ignored, one warm-up run, then -n measured
// runs on fresh caches. Reports median and spread of prompt tokens/s
// (prompt / time to first token), generation tokens/s (tokens after the
// first / time since it), time to first token and peak memory, and the bytes
// a decode step reads (weights as held plus the mean keys and values
// attended), for a bandwidth floor. With --batch B, B such prompts run
// together through the scheduler, and the decode rate is the aggregate
// tokens/s of the steps where all B rows decode.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/adapter_registry.h"
#include "engine/compute_device.h"
#include "engine/decode_traffic.h"
#include "engine/scheduler.h"
#include "engine/token_generator.h"
#include "io/error.h"
#include "kernels/cpu_features.h"
#include "kernels/kernels.h"
#include "model/layers.h"

namespace mlx_cpp::cli {
namespace {

struct BenchArguments {
  std::string model = kDefaultModel;
  int prompt_tokens = 512;
  int generate_tokens_count = 128;
  int runs = 5;
  int threads = 0;
  std::string kernels = "fast";
  bool unfused = false;
  bool json = false;
  int batch = 1;
  // Adapter directories the batch's rows take in turn (row b: b mod n).
  std::vector<std::string> row_adapters;
  KvCacheArguments kv_cache;
};

// The CPU and, per weight width, the quantized matmul kernels the run takes
// (decode and prefill shapes, at the model's precision choices), so every
// number comes with what produced it.
nlohmann::json kernel_report(KernelMode mode) {
  nlohmann::json report = {{"device", compute_device_description()},
                           {"cpu", kernels::cpu_model()},
                           {"features", kernels::cpu_feature_names()},
                           {"simd", kernels::level_name(kernels::active_level())}};
  if (mode == KernelMode::stock) {
    report["quantized_matmul"] = "stock (MLX's quantized_matmul)";
    return report;
  }
  // On the GPU: the own matrix-vector kernel for decode-shaped 4- and 8-bit
  // calls (kernels/gpu/), MLX's kernels for the rest and for every other op.
  if (computing_on_gpu()) {
    report["quantized_matmul"] =
        "own GPU matrix-vector kernel (4/8-bit decode), MLX's quantized_matmul otherwise";
    return report;
  }
  nlohmann::json variants;
  for (int bits : {4, 6, 8}) {
    const std::string width = "q" + std::to_string(bits);
    variants[width] = {{"decode", kernels::quantized_matmul_variant(
                                      bits, true, kActivationPrecision, kPrefillArithmetic)},
                       {"prefill", kernels::quantized_matmul_variant(
                                       bits, false, kActivationPrecision, kPrefillArithmetic)}};
  }
  report["quantized_matmul"] = variants;
  return report;
}

void print_kernel_report(KernelMode mode) {
  const auto report = kernel_report(mode);
  std::string features;
  for (const auto& feature : report["features"]) features += " " + feature.get<std::string>();
  std::printf("device %s\n", report["device"].get<std::string>().c_str());
  std::printf("cpu %s (%s), simd %s\n", report["cpu"].get<std::string>().c_str(),
              features.empty() ? "no SIMD extensions" : features.substr(1).c_str(),
              report["simd"].get<std::string>().c_str());
  const auto& variants = report["quantized_matmul"];
  if (variants.is_string()) {
    std::printf("quantized matmul: %s\n", variants.get<std::string>().c_str());
    return;
  }
  for (const auto& [width, kinds] : variants.items()) {
    std::printf("quantized matmul %s: decode %s, prefill %s\n", width.c_str(),
                kinds["decode"].get<std::string>().c_str(),
                kinds["prefill"].get<std::string>().c_str());
  }
}

struct Summary {
  double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.front(), values.back()};
}

GenerationStats run_once(const LoadedModel& loaded, KernelMode kernels,
                         const KvCacheScheme& kv_cache, const std::vector<int>& prompt, int tokens,
                         CacheList& caches) {
  caches = loaded.model->make_caches();
  GenerationOptions options;
  options.kv_cache = kv_cache;
  options.max_tokens = tokens;
  options.prefill_step_size = default_prefill_step(kernels);
  options.kernels = kernels;
  return generate_tokens(*loaded.model, caches, prompt, options, /*eos_token_ids=*/{},
                         [](const GeneratedToken&) { return true; });
}

using Clock = std::chrono::steady_clock;

// One run of `prompts` together: the aggregate tokens/s while every row
// decodes (from the last row's first token to the first row's last).
double batched_decode_rate(Scheduler& scheduler, const std::vector<std::vector<int>>& prompts,
                           int tokens, const KvCacheScheme& kv_cache,
                           const std::vector<std::shared_ptr<const AdapterStack>>& adapters) {
  std::vector<std::vector<Clock::time_point>> times(prompts.size());
  int finished = 0;
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    TextRequest request;
    request.prompt_ids = prompts[b];
    request.options.max_tokens = tokens;
    request.options.kv_cache = kv_cache;
    request.ignore_eos = true;  // every row decodes all its tokens, as the one-row bench
    if (!adapters.empty()) request.options.adapters = adapters[b % adapters.size()];
    SequenceSink sink;
    sink.on_chunk = [&times, b](const TextChunk&) {
      times[b].push_back(Clock::now());
      return true;
    };
    sink.on_finish = [&finished](TextResult) { ++finished; };
    sink.on_error = [](std::exception_ptr error) { std::rethrow_exception(error); };
    scheduler.submit(std::move(request), std::move(sink));
  }
  while (finished < static_cast<int>(prompts.size())) scheduler.step();
  Clock::time_point start = times[0].front(), end = times[0].back();
  for (const auto& row : times) {
    start = std::max(start, row.front());
    end = std::min(end, row.back());
  }
  long count = 0;
  for (const auto& row : times)
    count += std::count_if(row.begin(), row.end(),
                           [&](Clock::time_point t) { return t > start && t <= end; });
  const double seconds = std::chrono::duration<double>(end - start).count();
  return seconds > 0 ? count / seconds : 0;
}

void run_batch_bench(const BenchArguments& args, LoadedModel loaded, KernelMode kernels) {
  if (args.generate_tokens_count < 3) throw Error("bench: --batch needs -g of at least 3");
  auto runtime = ModelRuntime::for_token_ids(std::move(loaded), {0, kernels});
  SchedulerOptions options;
  options.max_batch = args.batch;
  options.prefill_batch = args.batch;
  Scheduler scheduler(*runtime, options);
  std::mt19937 random(0);
  std::uniform_int_distribution<int> token(0, runtime->model().vocab_size() - 1);
  std::vector<std::vector<int>> prompts(args.batch, std::vector<int>(args.prompt_tokens));
  for (auto& prompt : prompts)
    for (auto& id : prompt) id = token(random);
  const auto kv_cache = args.kv_cache.to_scheme();
  std::vector<std::shared_ptr<const AdapterStack>> adapters;
  for (const auto& directory : args.row_adapters)
    adapters.push_back(load_adapter_stack(runtime->model(), {directory}));
  const int tokens = args.generate_tokens_count;
  batched_decode_rate(scheduler, prompts, tokens, kv_cache, adapters);  // warm-up
  std::vector<double> rates;
  for (int run = 0; run < args.runs; ++run)
    rates.push_back(batched_decode_rate(scheduler, prompts, tokens, kv_cache, adapters));
  auto rate = summarize(rates);
  std::printf("model %s, kernels %s, threads %d, batch %d, prompt %d, generate %d, runs %d\n",
              args.model.c_str(), args.kernels.c_str(), kernels::kernel_threads(), args.batch,
              args.prompt_tokens, args.generate_tokens_count, args.runs);
  print_kernel_report(kernels);
  std::printf("aggregate decode tokens/s: median %.2f, min %.2f, max %.2f\n", rate.median, rate.min,
              rate.max);
  if (!adapters.empty())
    std::printf("rows take %zu adapters in turn (rank %d, %.1f MB each)\n", adapters.size(),
                adapters.front()->entries().front().adapter->rank,
                adapters.front()->entries().front().adapter->bytes / 1e6);
  std::printf("RESULT batch=%d adapters=%zu aggregate_generation_tps=%.3f\n", args.batch,
              adapters.size(), rate.median);
}

void run_bench(const BenchArguments& args) {
  if (args.prompt_tokens < 1 || args.generate_tokens_count < 1 || args.runs < 1)
    throw Error("bench: -p, -g and -n must be at least 1");
  kernels::set_kernel_threads(args.threads);
  const auto directory = resolve_model_argument(args.model);
  const KernelMode kernels = parse_kernel_mode(args.kernels);
  LoadOptions options;
  options.kernels = kernels;
  options.fused_decode = !args.unfused;
  auto loaded = load_model(directory, options);
  if (args.batch > 1 || !args.row_adapters.empty())
    return run_batch_bench(args, std::move(loaded), kernels);
  std::mt19937 random(0);
  std::uniform_int_distribution<int> token(0, loaded.model->vocab_size() - 1);
  std::vector<int> prompt(args.prompt_tokens);
  for (auto& id : prompt) id = token(random);

  CacheList caches;
  const auto kv_cache = args.kv_cache.to_scheme();
  run_once(loaded, kernels, kv_cache, prompt, args.generate_tokens_count, caches);  // warm-up
  std::vector<double> prefill, decode, first_token, memory;
  for (int run = 0; run < args.runs; ++run) {
    auto stats = run_once(loaded, kernels, kv_cache, prompt, args.generate_tokens_count, caches);
    prefill.push_back(stats.prompt_tokens_per_second());
    decode.push_back(stats.generation_tokens_per_second());
    first_token.push_back(stats.prompt_seconds * 1000);
    memory.push_back(stats.peak_memory_bytes / 1e6);
  }
  auto p = summarize(prefill), g = summarize(decode), t = summarize(first_token),
       m = summarize(memory);
  // Decode steps after the first token attend over prompt + 1 .. prompt + g - 1.
  const double weight_bytes = static_cast<double>(loaded.model->weight_bytes_per_token());
  const double kv_bytes = mean_kv_bytes_read(caches, args.prompt_tokens + 1,
                                             args.prompt_tokens + args.generate_tokens_count - 1);
  if (args.json) {
    auto entry = [](const Summary& s) {
      return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
    };
    nlohmann::json report = {{"model", args.model},
                             {"kernels", args.kernels},
                             {"kv_cache", kv_cache.signature()},
                             {"threads", kernels::kernel_threads()},
                             {"prompt_tokens", args.prompt_tokens},
                             {"generated_tokens", args.generate_tokens_count},
                             {"runs", args.runs},
                             {"prompt_tps", entry(p)},
                             {"generation_tps", entry(g)},
                             {"ttft_ms", entry(t)},
                             {"peak_memory_mb", entry(m)},
                             {"weight_bytes_per_token", weight_bytes},
                             {"kv_bytes_per_token", kv_bytes},
                             {"machine", kernel_report(kernels)}};
    std::printf("%s\n", report.dump(2).c_str());
    return;
  }
  std::printf("model %s, kernels %s, threads %d, prompt %d, generate %d, runs %d, kv %s\n",
              args.model.c_str(), args.kernels.c_str(), kernels::kernel_threads(),
              args.prompt_tokens, args.generate_tokens_count, args.runs,
              kv_cache.signature().c_str());
  print_kernel_report(kernels);
  std::printf("%-22s %12s %12s %12s\n", "", "median", "min", "max");
  auto row = [](const char* name, const Summary& s) {
    std::printf("%-22s %12.2f %12.2f %12.2f\n", name, s.median, s.min, s.max);
  };
  row("prefill tokens/s", p);
  row("decode tokens/s", g);
  row("time to first token ms", t);
  row("peak memory MB", m);
  std::printf("decode reads %.1f MB per token: %.1f MB of weights, %.1f MB of keys and values\n",
              (weight_bytes + kv_bytes) / 1e6, weight_bytes / 1e6, kv_bytes / 1e6);
  std::printf(
      "RESULT prompt_tps=%.3f generation_tps=%.3f ttft_ms=%.3f peak_memory_mb=%.3f "
      "decode_bytes_per_token=%.0f\n",
      p.median, g.median, t.median, m.median, weight_bytes + kv_bytes);
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArguments>();
  auto* command = app.add_subcommand("bench", "Measure prefill and decode speed");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("-p,--prompt-tokens", args->prompt_tokens, "Prompt length")
      ->capture_default_str();
  command
      ->add_option("--batch", args->batch,
                   "Sequences decoding together through the scheduler (aggregate tokens/s)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  command->add_option("-g,--generate-tokens", args->generate_tokens_count, "Tokens to generate")
      ->capture_default_str();
  command->add_option("-n,--runs", args->runs, "Measured runs (after one warm-up)")
      ->capture_default_str();
  command->add_option("-t,--threads", args->threads, "Kernel threads (0 = all cores)")
      ->capture_default_str();
  add_kernels_option(command, args->kernels);
  add_kv_cache_options(command, args->kv_cache);
  command->add_flag("--unfused", args->unfused,
                    "Decode every block as its op graph, not as one fused node (to measure the "
                    "fused step against)");
  command
      ->add_option("--row-adapters", args->row_adapters,
                   "Adapter directories the batch's rows take in turn (through the scheduler)")
      ->delimiter(',');
  command->add_flag("--json", args->json, "Print a JSON report");
  command->callback([args] { run_bench(*args); });
}

}  // namespace mlx_cpp::cli
