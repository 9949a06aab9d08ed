// mlx-cpp pull NAME            download, verify, convert and record a model
// mlx-cpp models [--path NAME] list known models, or print one's directory
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "io/error.h"
#include "io/model_cache.h"

namespace mlx_cpp::cli {
namespace {

std::string human_bytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

std::string human_parameters(std::uint64_t parameters) {
  char text[32];
  if (parameters >= 1000000000) {
    std::snprintf(text, sizeof(text), "%.2fB", static_cast<double>(parameters) / 1e9);
  } else {
    std::snprintf(text, sizeof(text), "%.0fM", static_cast<double>(parameters) / 1e6);
  }
  return text;
}

void list_models() {
  std::printf("%-30s %-7s %-8s %-8s %-10s %s\n", "NAME", "PULLED", "ARCH", "PARAMS", "SIZE",
              "QUANTIZATION");
  for (const auto& entry : model_catalog()) {
    auto pulled = find_pulled_model(entry.name);
    std::string name = entry.name + (entry.name == default_model_name() ? " *" : "");
    if (pulled) {
      std::printf("%-30s %-7s %-8s %-8s %-10s %s\n", name.c_str(), "yes",
                  pulled->architecture.c_str(), human_parameters(pulled->parameters).c_str(),
                  human_bytes(pulled->bytes_on_disk).c_str(), pulled->quantization.c_str());
    } else {
      std::printf("%-30s %-7s %-8s %-8s %-10s %s\n", name.c_str(), "no", entry.architecture.c_str(),
                  entry.parameters.c_str(), "-", "-");
    }
  }
  std::printf("(* default model; cache: %s)\n", model_cache_root().string().c_str());
}

}  // namespace

void register_models_commands(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto* pull = app.add_subcommand("pull", "Download, verify and convert a known model");
  pull->add_option("name", *name, "Model name (see `mlx-cpp models`)")->required();
  pull->callback([name] { pull_model(*name, std::cout); });

  auto path_of = std::make_shared<std::string>();
  auto* models = app.add_subcommand("models", "List known models and what is pulled");
  models->add_option("--path", *path_of, "Print the converted directory of a pulled model");
  models->callback([path_of] {
    if (path_of->empty()) return list_models();
    auto pulled = find_pulled_model(*path_of);
    if (!pulled) resolve_model_path(*path_of);  // throws with the right advice
    std::cout << pulled->directory.string() << '\n';
  });
}

}  // namespace mlx_cpp::cli
