// mlx-cpp convert --gguf FILE --out DIR [--bits B] [--group-size G] [--dtype bf16]
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "io/error.h"
#include "io/gguf/converter.h"

namespace mlx_cpp::cli {
namespace {

struct ConvertArguments {
  std::string gguf;
  std::string out;
  int bits = 0;
  int group_size = 64;
  std::string dtype;
};

void run_convert(const ConvertArguments& arguments) {
  gguf::ConvertOptions options;
  if (arguments.bits != 0) options.bits = arguments.bits;
  options.group_size = arguments.group_size;
  if (!arguments.dtype.empty()) options.dense_dtype = gguf::parse_dense_dtype(arguments.dtype);
  auto summary = gguf::convert_gguf(arguments.gguf, arguments.out, options);
  std::cout << "converted " << summary.name << " (" << summary.architecture << " -> "
            << summary.model_type << ", " << summary.parameters << " parameters)\n"
            << "  source types: " << summary.source_types.dump() << '\n'
            << "  quantization: " << summary.quantization << " (" << summary.exact_tensors
            << " carried exactly, " << summary.requantized_tensors << " requantized)\n"
            << "  wrote " << summary.bytes_on_disk << " bytes to " << arguments.out << " in ";
  std::printf("%.1f s\n", summary.seconds);
}

}  // namespace

void register_convert_command(CLI::App& app) {
  auto arguments = std::make_shared<ConvertArguments>();
  auto* command = app.add_subcommand("convert", "Convert a GGUF file into an MLX model directory");
  command->add_option("--gguf", arguments->gguf, "GGUF file to convert")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--out", arguments->out, "Output directory (must not exist)")->required();
  command
      ->add_option("--bits", arguments->bits,
                   "Bits for tensors that must be requantized (default: 4; 6 for Q6_K, 8 for Q8_K)")
      ->check(CLI::IsMember({2, 3, 4, 5, 6, 8}));
  command->add_option("--group-size", arguments->group_size, "Group size for requantized tensors")
      ->check(CLI::IsMember({32, 64, 128}))
      ->capture_default_str();
  command->add_option("--dtype", arguments->dtype,
                      "Keep every tensor dense in this dtype instead (bf16, f16, f32)");
  command->callback([arguments] { run_convert(*arguments); });
}

}  // namespace mlx_cpp::cli
