#include "cli/model_argument.h"

#include "io/error.h"
#include "io/model_cache.h"

namespace mlx_cpp::cli {

std::filesystem::path resolve_model_argument(const std::string& name_or_directory) {
  return resolve_model_path(name_or_directory);
}

void add_kernels_option(CLI::App* command, std::string& kernels) {
  command
      ->add_option("--kernels", kernels, "fast (own CPU kernels) or stock (bit-exact with mlx-lm)")
      ->capture_default_str();
}

SamplerOptions SamplingArguments::to_options() const {
  SamplerOptions options;
  options.temperature = temperature;
  options.top_p = top_p;
  options.top_k = top_k;
  options.min_p = min_p;
  options.seed = seed;
  return options;
}

void add_sampling_options(CLI::App* command, SamplingArguments& sampling) {
  command->add_option("--temp", sampling.temperature, "Sampling temperature (0 = greedy)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--top-p", sampling.top_p, "Nucleus sampling mass (1 = off)")
      ->capture_default_str();
  command->add_option("--top-k", sampling.top_k, "Sample from the k most likely tokens (0 = off)")
      ->capture_default_str();
  command
      ->add_option("--min-p", sampling.min_p, "Minimum probability relative to the top (0 = off)")
      ->capture_default_str();
  command->add_option("--seed", sampling.seed, "Random seed (same seed, same tokens)");
}

void add_speculative_options(CLI::App* command, SpeculativeArguments& speculative) {
  command->add_option("--draft-model", speculative.draft_model,
                      "Draft model for speculative decoding (directory or cached name; same "
                      "vocabulary as the model)");
  command->add_option("--spec", speculative.source,
                      "Speculative decoding: draft (the draft model), prompt-lookup (n-grams of "
                      "the context) or none (default: draft when --draft-model is given)");
  command
      ->add_option("--draft-tokens", speculative.draft_tokens, "Tokens proposed per verify at most")
      ->capture_default_str();
  command
      ->add_option("--spec-ngram", speculative.ngram, "Prompt lookup: the longest n-gram to match")
      ->capture_default_str();
  command
      ->add_option("--spec-schedule", speculative.schedule,
                   "confidence: verify as many drafts as pay on this machine (at most "
                   "--draft-tokens, none when none do); fixed: always --draft-tokens")
      ->capture_default_str()
      ->check(CLI::IsMember({"confidence", "fixed"}));
}

SpeculativeOptions SpeculativeArguments::to_options() const {
  SpeculativeOptions options;
  options.kind = source.empty() ? (draft_model.empty() ? DraftKind::none : DraftKind::draft_model)
                                : parse_draft_kind(source);
  options.draft_tokens = draft_tokens;
  options.ngram = ngram;
  options.confidence = schedule != "fixed";
  if (options.kind == DraftKind::draft_model && draft_model.empty())
    throw Error("--spec draft needs --draft-model");
  if (options.enabled()) validate_speculative_options(options);
  return options;
}

std::optional<std::filesystem::path> SpeculativeArguments::draft_directory() const {
  if (draft_model.empty()) return std::nullopt;
  return resolve_model_argument(draft_model);
}

void add_kv_cache_options(CLI::App* command, KvCacheArguments& kv_cache) {
  command
      ->add_option("--kv-bits", kv_cache.bits,
                   "Quantize the KV cache to this many bits: 4 or 8 (also 2, 3, 5, 6); 0 keeps "
                   "it in the model's float type")
      ->capture_default_str();
  command
      ->add_option("--kv-group-size", kv_cache.group_size,
                   "KV quantization group along the head dimension: 32, 64 or 128")
      ->capture_default_str();
  command
      ->add_option("--quantized-kv-start", kv_cache.quantized_start,
                   "Quantize a layer's cache once it holds this many tokens (as mlx-lm)")
      ->capture_default_str();
  command
      ->add_option("--kv-scheme", kv_cache.scheme,
                   "How --kv-bits quantizes: affine (mlx-lm's) or turbo (TurboQuant: rotated, "
                   "codebook-quantized; 2, 3, 4 or 8 bits; CPU only)")
      ->capture_default_str();
  command->add_option("--kv-float-layers", kv_cache.float_layers,
                      "Layers whose cache stays in float under --kv-bits, e.g. 0,-1 (the first "
                      "and the last)");
}

KvCacheScheme KvCacheArguments::to_scheme() const {
  KvCacheScheme scheme;
  if (bits < 0) throw Error("--kv-bits must be >= 0");
  if (bits > 0)
    scheme.quantization = KvQuantization{bits, group_size, parse_kv_packing(this->scheme)};
  else if (this->scheme != "affine")
    throw Error("--kv-scheme needs --kv-bits");
  scheme.quantized_start = quantized_start;
  if (!float_layers.empty()) {
    if (!scheme.quantization) throw Error("--kv-float-layers needs --kv-bits");
    scheme.float_layers = parse_layer_list(float_layers);
  }
  return scheme;
}

KernelMode parse_kernel_mode(const std::string& name) {
  if (name == "fast") return KernelMode::fast;
  if (name == "stock") return KernelMode::stock;
  throw Error("--kernels must be fast or stock, not '" + name + "'");
}

void add_adapter_option(CLI::App* command, std::vector<std::string>& adapters) {
  command->add_option("--adapter", adapters,
                      "LoRA/DoRA adapter directory in mlx-lm's format (repeatable: stacked)");
}

}  // namespace mlx_cpp::cli
