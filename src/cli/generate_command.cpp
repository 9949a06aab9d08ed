#include "cli/command.h"

namespace mlx_cpp::cli {
void register_generate_command(CLI::App&) {}
void register_tokenize_commands(CLI::App&) {}
}  // namespace mlx_cpp::cli
