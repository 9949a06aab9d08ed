#pragma once
// Each CLI subcommand lives in its own file and registers itself on the app.
// A command's callback throws mlx_cpp::Error for user mistakes; main() prints
// the message on one line and exits non-zero.
#include <CLI/CLI.hpp>

namespace mlx_cpp::cli {

void register_generate_command(CLI::App& app);
void register_tokenize_commands(CLI::App& app);
void register_convert_command(CLI::App& app);
void register_models_commands(CLI::App& app);
void register_chat_command(CLI::App& app);
void register_bench_command(CLI::App& app);
void register_perplexity_command(CLI::App& app);
void register_serve_command(CLI::App& app);
void register_template_command(CLI::App& app);
void register_inspect_command(CLI::App& app);
void register_cache_prompt_command(CLI::App& app);
void register_fuse_command(CLI::App& app);
void register_lora_command(CLI::App& app);
void register_embed_command(CLI::App& app);

}  // namespace mlx_cpp::cli
