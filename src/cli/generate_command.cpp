// mlx-cpp generate: one prompt in, streamed text out (stats on stderr).
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/adapter_registry.h"
#include "engine/cached_prompt.h"
#include "engine/session.h"
#include "io/error.h"

namespace mlx_cpp::cli {
namespace {

struct GenerateArguments {
  std::string model = kDefaultModel;
  std::string prompt;
  std::string system;
  bool chat = false;  // accepted for older scripts: the template is the default
  bool raw = false;
  int max_tokens = 100;
  SamplingArguments sampling;
  std::optional<float> repetition_penalty;
  int repetition_context_size = 20;
  int context_size = 0;
  std::vector<std::string> stop;
  std::string kernels = "fast";
  SpeculativeArguments speculative;
  KvCacheArguments kv_cache;
  std::string prompt_cache_file;
  std::vector<std::string> adapters;
  bool model_given = false;
};

// The model a prompt-cache file is continued with: --model, or the one the
// file names. Both given must be one model (mlx-lm's generate refuses a
// different one too): its caches would be another model's keys.
std::filesystem::path model_for_cached_prompt(const GenerateArguments& args,
                                              const std::map<std::string, std::string>& metadata) {
  auto named = metadata.find("model");
  if (!args.model_given) {
    if (named == metadata.end())
      throw Error("the prompt cache " + args.prompt_cache_file + " names no model: give --model");
    return resolve_model_argument(named->second);
  }
  const auto directory = resolve_model_argument(args.model);
  if (named != metadata.end() && named->second != args.model) {
    std::error_code error;
    const auto cached = resolve_model_argument(named->second);
    if (!std::filesystem::equivalent(cached, directory, error))
      throw Error("the prompt cache " + args.prompt_cache_file + " was made with model " +
                  named->second + ", not " + args.model);
  }
  return directory;
}

void print_stats(const TextResult& result) {
  const auto& stats = result.stats;
  std::fprintf(stderr, "\n==========\n");
  std::fprintf(stderr, "Prompt: %d tokens (%d cached), %.3f tokens-per-sec\n",
               stats.prompt_tokens + result.cached_prompt_tokens, result.cached_prompt_tokens,
               stats.prompt_tokens_per_second());
  std::fprintf(stderr, "Time to first token: %.3f s\n", stats.prompt_seconds);
  std::fprintf(stderr, "Generation: %d tokens, %.3f tokens-per-sec\n", stats.generated_tokens,
               stats.generation_tokens_per_second());
  if (stats.draft_proposed > 0)
    std::fprintf(stderr, "Speculative: %d of %d proposed tokens accepted (%.1f%%)\n",
                 stats.draft_accepted, stats.draft_proposed,
                 100.0 * stats.draft_accepted / stats.draft_proposed);
  std::fprintf(stderr, "Peak memory: %.3f GB\n", stats.peak_memory_bytes / 1e9);
  std::fprintf(stderr, "Finish reason: %s\n", result.finish_reason.c_str());
}

void run_generate(const GenerateArguments& args) {
  const auto speculative = args.speculative.to_options();
  std::optional<PromptCacheContents> cached;
  if (!args.prompt_cache_file.empty()) cached = load_prompt_cache(args.prompt_cache_file);
  auto session = Session::open(
      cached ? model_for_cached_prompt(args, cached->metadata) : resolve_model_argument(args.model),
      {args.context_size, parse_kernel_mode(args.kernels),
       args.speculative.draft_directory_for(speculative)});
  // As mlx-lm's generate: the prompt is a user message in the model's chat
  // template when it has one (an instruction-tuned model given raw text
  // often answers nothing); --raw sends the text as it is.
  const auto& runtime = session->runtime();
  if (args.raw && !args.system.empty()) throw Error("--system needs the chat template (not --raw)");
  if (args.chat && args.raw) throw Error("--chat and --raw exclude each other");
  if (args.chat && !runtime.has_chat_template())
    throw Error("--chat: this model has no chat template");
  // A cached prompt left a user message open: the prompt completes it
  // (mlx-lm's generate --prompt-cache-file).
  const bool templated = !args.raw && runtime.has_chat_template();
  std::vector<int> prompt_ids =
      !templated ? runtime.encode(args.prompt, true)
      : cached   ? runtime.encode_user_message_continuation(args.prompt, args.system)
                 : runtime.encode_user_message(args.prompt, args.system);
  TextRequest request;
  if (cached)
    request.cached_prompt = cached_prompt_from(std::move(*cached), runtime.model(),
                                               args.kv_cache.to_scheme(), args.prompt_cache_file);
  request.prompt_ids = prompt_ids;
  request.stop = args.stop;
  auto& options = request.options;
  options.max_tokens = args.max_tokens;
  options.sampler = args.sampling.to_options();
  options.penalties.repetition_penalty = args.repetition_penalty;
  options.penalties.repetition_context_size = args.repetition_context_size;
  options.speculative = speculative;
  options.kv_cache = args.kv_cache.to_scheme();
  options.adapters =
      load_adapter_stack(runtime.model(), {args.adapters.begin(), args.adapters.end()});
  auto result = session->generate(request, [](const TextChunk& chunk) {
    std::cout << chunk.text << std::flush;
    return true;
  });
  std::cout << std::endl;
  print_stats(result);
}

}  // namespace

void register_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArguments>();
  auto* command = app.add_subcommand("generate", "Generate text from a prompt (streams to stdout)");
  auto* model =
      command->add_option("-m,--model", args->model, "Model directory or cached model name");
  model->capture_default_str();
  command->add_option("-p,--prompt", args->prompt, "Prompt text")->required();
  command->add_flag("--raw", args->raw,
                    "Send the prompt as it is, not as a user message in the chat template");
  command->add_flag("--chat", args->chat,
                    "Wrap the prompt in the chat template (the default when the model has one)");
  command->add_option("--system", args->system, "System message (in the chat template)");
  command->add_option("--max-tokens", args->max_tokens, "Maximum tokens to generate")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_sampling_options(command, args->sampling);
  command->add_option("--repetition-penalty", args->repetition_penalty,
                      "Penalty for tokens in the recent context (1 = off)");
  command
      ->add_option("--repetition-context-size", args->repetition_context_size,
                   "Tokens the repetition penalty looks back over")
      ->capture_default_str();
  command->add_option("--stop", args->stop, "Stop string (repeatable)");
  command->add_option("--ctx-size", args->context_size,
                      "Context size in tokens (default: the model's maximum)");
  add_kernels_option(command, args->kernels);
  add_speculative_options(command, args->speculative);
  add_kv_cache_options(command, args->kv_cache);
  add_adapter_option(command, args->adapters);
  command->add_option("--prompt-cache-file", args->prompt_cache_file,
                      "Continue from a prompt-cache file (cache-prompt, or mlx-lm's)");
  command->callback([args, model] {
    args->model_given = model->count() > 0;
    run_generate(*args);
  });
}

}  // namespace mlx_cpp::cli
