#include <exception>
#include <iostream>

#include "cli/command.h"
#include "engine/compute_device.h"
#include "engine/instruction_set_choice.h"
#include "io/error.h"

int main(int argc, char** argv) {
  CLI::App app{"mlx-cpp: run and serve MLX-format language models", "mlx-cpp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mlx-cpp 0.1.0");
  // Every command computes on the device chosen here, before its callback.
  std::string device = "auto";
  app.add_option("--device", device,
                 "Where to compute: gpu, cpu or auto (the GPU when this build has one and "
                 "the machine shows one)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->envname("MLX_CPP_DEVICE");
  std::string isa = "native";
  app.add_option("--isa", isa,
                 "Highest SIMD level the CPU kernels use: native (all this CPU has), scalar, "
                 "avx2, avx512, avx512-vnni, avx512-bf16 or avx512-fp16")
      ->envname("MLX_CPP_ISA");
  app.fallthrough();  // `mlx-cpp generate --device cpu` as well as `mlx-cpp --device cpu generate`
  app.parse_complete_callback([&device, &isa] {
    mlx_cpp::select_compute_device(mlx_cpp::parse_compute_device(device));
    mlx_cpp::select_instruction_set(isa);
  });
  mlx_cpp::cli::register_generate_command(app);
  mlx_cpp::cli::register_tokenize_commands(app);
  mlx_cpp::cli::register_convert_command(app);
  mlx_cpp::cli::register_models_commands(app);
  mlx_cpp::cli::register_chat_command(app);
  mlx_cpp::cli::register_bench_command(app);
  mlx_cpp::cli::register_perplexity_command(app);
  mlx_cpp::cli::register_serve_command(app);
  mlx_cpp::cli::register_template_command(app);
  mlx_cpp::cli::register_inspect_command(app);
  mlx_cpp::cli::register_cache_prompt_command(app);
  mlx_cpp::cli::register_fuse_command(app);
  mlx_cpp::cli::register_lora_command(app);
  mlx_cpp::cli::register_embed_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const mlx_cpp::Error& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 2;
  }
  return 0;
}
