// mlx-cpp perplexity: how well a model predicts a text file.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/perplexity.h"
#include "engine/session.h"
#include "io/error.h"

namespace mlx_cpp::cli {
namespace {

struct PerplexityArguments {
  std::string model = kDefaultModel;
  std::string file;
  int context = 512;
  std::string kernels = "fast";
  KvCacheArguments kv_cache;
};

void run_perplexity(const PerplexityArguments& args) {
  std::ifstream stream(args.file, std::ios::binary);
  if (!stream) throw Error("cannot read " + args.file);
  std::stringstream text;
  text << stream.rdbuf();
  auto session =
      Session::open(resolve_model_argument(args.model), {0, parse_kernel_mode(args.kernels)});
  auto tokens = session->encode(text.str(), false);
  auto result = compute_perplexity(session->model(), tokens, args.context,
                                   session->tokenizer().bos_token_id(), args.kv_cache.to_scheme());
  std::printf("perplexity %.4f over %d scored tokens (%d windows of %d, %zu tokens in the file)\n",
              result.perplexity, result.scored_tokens, result.chunks, args.context, tokens.size());
  std::printf("RESULT perplexity=%.6f nll=%.6f scored_tokens=%d\n", result.perplexity,
              result.mean_negative_log_likelihood, result.scored_tokens);
}

}  // namespace

void register_perplexity_command(CLI::App& app) {
  auto args = std::make_shared<PerplexityArguments>();
  auto* command = app.add_subcommand("perplexity", "Perplexity of a model over a text file");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("-f,--file", args->file, "Text file")->required();
  command->add_option("-c,--ctx", args->context, "Window size in tokens (second half scored)")
      ->capture_default_str();
  add_kernels_option(command, args->kernels);
  add_kv_cache_options(command, args->kv_cache);
  command->callback([args] { run_perplexity(*args); });
}

}  // namespace mlx_cpp::cli
