// mlx-cpp fuse --model M --adapter-path DIR --save-path OUT [--dequantize]
// (mlx_lm.fuse's flags): the adapter merged into a new checkpoint.
#include <iostream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "model/fuse_adapter.h"

namespace mlx_cpp::cli {
namespace {

struct FuseArguments {
  std::string model = kDefaultModel;
  std::string adapter_path = "adapters";
  std::string save_path = "fused_model";
  bool dequantize = false;
};

}  // namespace

void register_fuse_command(CLI::App& app) {
  auto args = std::make_shared<FuseArguments>();
  auto* command = app.add_subcommand(
      "fuse", "Merge a LoRA/DoRA adapter into the model's weights (as mlx_lm.fuse)");
  command->add_option("-m,--model", args->model, "Model directory or cached model name")
      ->capture_default_str();
  command->add_option("--adapter-path", args->adapter_path, "Adapter directory")
      ->capture_default_str();
  command->add_option("--save-path", args->save_path, "Directory to write (new or empty)")
      ->capture_default_str();
  command->add_flag("--dequantize", args->dequantize,
                    "Write every quantized projection dequantized (the fused ones included)");
  command->callback([args] {
    auto report = fuse_adapter(resolve_model_argument(args->model), args->adapter_path,
                               args->save_path, args->dequantize);
    std::cout << "fused " << report.fused_projections << " projections";
    if (args->dequantize) std::cout << ", dequantized " << report.dequantized_modules << " modules";
    std::cout << "; wrote " << report.bytes_written << " bytes of weights to " << args->save_path
              << "\n";
  });
}

}  // namespace mlx_cpp::cli
