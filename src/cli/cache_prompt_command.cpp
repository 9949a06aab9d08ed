// mlx-cpp cache-prompt: prefill a prompt once and save its caches as a
// prompt-cache file in mlx-lm's format (mlx_lm.cache_prompt), which
// `generate --prompt-cache-file` (ours or mlx-lm's) continues from.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/session.h"
#include "io/error.h"
#include "model/prompt_cache_file.h"

namespace mlx_cpp::cli {
namespace {

struct CachePromptArguments {
  std::string model = kDefaultModel;
  std::string prompt;
  std::string prompt_file;
  std::string system;
  std::string out;
  bool raw = false;
  int context_size = 0;
  std::string kernels = "fast";
  KvCacheArguments kv_cache;
};

std::string read_prompt(const CachePromptArguments& args) {
  if (args.prompt_file.empty()) return args.prompt;
  std::ifstream stream(args.prompt_file, std::ios::binary);
  if (!stream) throw Error("cannot read --prompt-file " + args.prompt_file);
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

void run_cache_prompt(const CachePromptArguments& args) {
  if (args.prompt.empty() == args.prompt_file.empty())
    throw Error("give the prompt as --prompt TEXT or --prompt-file FILE (one of them)");
  if (args.raw && !args.system.empty()) throw Error("--system needs the chat template (not --raw)");
  const std::string prompt = read_prompt(args);
  const auto directory = std::filesystem::absolute(resolve_model_argument(args.model));
  auto session = Session::open(directory, {args.context_size, parse_kernel_mode(args.kernels)});
  const auto& runtime = session->runtime();
  // As mlx-lm's cache_prompt: a user message left open in the chat template
  // (the question that follows completes it), or the raw text.
  std::vector<int> ids;
  if (!args.raw && runtime.has_chat_template()) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!args.system.empty()) messages.push_back({{"role", "system"}, {"content", args.system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    ids = runtime.encode(runtime.render_continued(messages), false);
  } else {
    ids = runtime.encode(prompt, true);
  }
  if (ids.empty()) throw Error("the prompt has no tokens");
  if (static_cast<int>(ids.size()) >= runtime.context_size())
    throw Error("the prompt has " + std::to_string(ids.size()) +
                " tokens, more than the context size " + std::to_string(runtime.context_size()) +
                " allows");
  auto options = runtime.default_options();
  options.max_tokens = 0;
  options.kernels = runtime.kernels();
  options.prefill_step_size = default_prefill_step(runtime.kernels());
  options.kv_cache = args.kv_cache.to_scheme();
  validate_kv_cache_scheme(options.kv_cache, runtime.model());
  auto caches = runtime.model().make_caches();
  const auto stats = generate_tokens(runtime.model(), caches, ids, options, {},
                                     [](const GeneratedToken&) { return true; });
  std::fprintf(stderr, "Processed %d tokens, %.3f tokens-per-sec\n", stats.prompt_tokens,
               stats.prompt_tokens_per_second());
  std::fprintf(stderr, "Peak memory: %.3f GB\n", stats.peak_memory_bytes / 1e9);
  // mlx-lm's generate reads "model" (the model a continuation must name,
  // here its directory, which mlx-lm loads too) and "tokenizer_config"
  // (its tokenizer's options).
  save_prompt_cache(
      args.out, caches,
      {{"model", directory.string()}, {"tokenizer_config", R"({"trust_remote_code": false})"}});
  std::fprintf(stderr, "Saved %s: %zu tokens, %zu bytes of caches (%s)\n", args.out.c_str(),
               ids.size(), cache_list_bytes(caches), options.kv_cache.signature().c_str());
}

}  // namespace

void register_cache_prompt_command(CLI::App& app) {
  auto args = std::make_shared<CachePromptArguments>();
  auto* command = app.add_subcommand(
      "cache-prompt", "Prefill a prompt and save its KV caches (mlx-lm's prompt-cache format)");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("-p,--prompt", args->prompt, "Prompt text");
  command->add_option("--prompt-file", args->prompt_file, "File holding the prompt text");
  command->add_option("--out,--prompt-cache-file", args->out, "The .safetensors file to write")
      ->required();
  command->add_flag("--raw", args->raw,
                    "Cache the text as it is, not as a user message in the chat template");
  command->add_option("--system", args->system, "System message (in the chat template)");
  command->add_option("--ctx-size", args->context_size,
                      "Context size in tokens (default: the model's maximum)");
  add_kernels_option(command, args->kernels);
  add_kv_cache_options(command, args->kv_cache);
  command->callback([args] { run_cache_prompt(*args); });
}

}  // namespace mlx_cpp::cli
