// mlx-cpp pull NAME            download, verify, convert and record a model
// mlx-cpp models [--path NAME] list known models, or print one's directory
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "io/error.h"
#include "io/model_cache.h"
#include "model/architectures.h"
#include "model/dedicated_graphs.h"
#include "model/language_model.h"

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

// Which part of mlx-cpp serves a converted model, by its config's
// model_type (`mlx-cpp inspect` tells more): a dedicated graph, or the
// descriptor table's generic graph.
const char* tier_of(const std::filesystem::path& directory) {
  try {
    const auto config = read_model_config(directory);
    const auto types = supported_model_types();
    const auto model_type = remap_model_type(config.value("model_type", std::string()));
    if (find_dedicated_graph(model_type)) return "dedicated";
    const bool known = std::find(types.begin(), types.end(), model_type) != types.end();
    return known ? "generic" : "unsupported";
  } catch (const Error&) {
    return "unreadable";
  }
}

void list_models() {
  std::printf("%-30s %-7s %-12s %-8s %-8s %-10s %s\n", "NAME", "PULLED", "ARCH", "TIER", "PARAMS",
              "SIZE", "QUANTIZATION");
  for (const auto& entry : model_catalog()) {
    auto pulled = find_pulled_model(entry.name);
    std::string name = entry.name + (entry.name == default_model_name() ? " *" : "");
    if (pulled) {
      std::printf("%-30s %-7s %-12s %-8s %-8s %-10s %s\n", name.c_str(), "yes",
                  pulled->architecture.c_str(), tier_of(pulled->directory),
                  human_parameters(pulled->parameters).c_str(),
                  human_bytes(pulled->bytes_on_disk).c_str(), pulled->quantization.c_str());
    } else {
      std::printf("%-30s %-7s %-12s %-8s %-8s %-10s %s\n", name.c_str(), "no",
                  entry.architecture.c_str(), "-", entry.parameters.c_str(), "-", "-");
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
