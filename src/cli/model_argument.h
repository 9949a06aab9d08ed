#pragma once
// Options every model-running command reads the same way: --model (a model
// directory, or the name of a model in the local cache, see `mlx-cpp
// models`), --kernels, and the sampling flags.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

#include "engine/kv_cache_scheme.h"
#include "engine/speculative/speculative_options.h"
#include "model/sampler.h"
#include "model/transformer_spec.h"

namespace mlx_cpp::cli {

inline constexpr const char* kDefaultModel = "smollm2-135m-instruct";

std::filesystem::path resolve_model_argument(const std::string& name_or_directory);

// "fast" (own kernels, the default) or "stock" (bit-exact with mlx-lm).
KernelMode parse_kernel_mode(const std::string& name);

// Adds --kernels fast|stock, shared by every command that runs a model.
void add_kernels_option(CLI::App* command, std::string& kernels);

// The sampling flags generate and chat share (--temp, --top-p, --top-k,
// --min-p, --seed), with mlx-lm's CLI defaults (greedy).
struct SamplingArguments {
  float temperature = 0.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  std::optional<uint64_t> seed;
  SamplerOptions to_options() const;
};
void add_sampling_options(CLI::App* command, SamplingArguments& sampling);

// Speculative decoding flags (generate, chat, serve): --draft-model,
// --draft-tokens, --spec, --spec-ngram, --spec-schedule. --draft-model
// alone means --spec draft.
struct SpeculativeArguments {
  std::string draft_model;  // a model directory or cached name; empty: none
  std::string source;       // draft | prompt-lookup | none; empty: draft when draft_model is set
  int draft_tokens = SpeculativeOptions{}.draft_tokens;
  int ngram = SpeculativeOptions{}.ngram;
  std::string schedule = "confidence";  // or "fixed"
  // Validated options; throws Error for --spec draft without a draft model.
  SpeculativeOptions to_options() const;
  // The draft model's directory, if one was named.
  std::optional<std::filesystem::path> draft_directory() const;
  // The draft model's directory if the options draft with it (a command
  // that serves one request configuration loads no unused draft).
  std::optional<std::filesystem::path> draft_directory_for(
      const SpeculativeOptions& options) const {
    return options.kind == DraftKind::draft_model ? draft_directory() : std::nullopt;
  }
};
void add_speculative_options(CLI::App* command, SpeculativeArguments& speculative);

// KV cache flags (generate, chat, serve, bench, perplexity): --kv-bits,
// --kv-group-size, --quantized-kv-start (mlx-lm's names and defaults),
// --kv-float-layers and --kv-scheme.
struct KvCacheArguments {
  int bits = 0;  // 0: float caches
  int group_size = KvQuantization{}.group_size;
  std::string scheme = "affine";
  int quantized_start = kDefaultQuantizedKvStart;
  std::string float_layers;  // e.g. "0,-1"
  KvCacheScheme to_scheme() const;
};
void add_kv_cache_options(CLI::App* command, KvCacheArguments& kv_cache);

// --adapter DIR (repeatable: stacked in order), generate and chat.
void add_adapter_option(CLI::App* command, std::vector<std::string>& adapters);

}  // namespace mlx_cpp::cli
