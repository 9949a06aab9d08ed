// Cache location, registry and --model resolution.
#include "io/model_cache.h"

#include <cstdlib>

#include "io/error.h"
#include "io/json_file.h"
#include "io/model_cache_registry.h"

#ifndef MLX_CPP_DEFAULT_PYTHON
#define MLX_CPP_DEFAULT_PYTHON "python3"
#endif

namespace mlx_cpp {

namespace fs = std::filesystem;

fs::path model_cache_root() {
  if (const char* home = std::getenv("MLX_CPP_HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  const char* user_home = std::getenv("HOME");
  if (user_home == nullptr || *user_home == '\0') {
    throw Error("[models] neither MLX_CPP_HOME nor HOME is set: cannot locate the model cache");
  }
  return fs::path(user_home) / ".cache" / "mlx-cpp";
}

std::string model_cache_python() {
  if (const char* python = std::getenv("MLX_CPP_PYTHON"); python != nullptr && *python != '\0') {
    return python;
  }
  return MLX_CPP_DEFAULT_PYTHON;
}

fs::path registry_path() {
  return model_cache_root() / "registry.json";
}

nlohmann::json read_registry() {
  auto path = registry_path();
  if (!fs::exists(path)) return nlohmann::json::object();
  auto registry = read_json_file(path);
  if (!registry.is_object()) throw Error("[models] " + path.string() + " is not a JSON object");
  return registry;
}

void record_pulled_model(const PulledModel& model) {
  auto registry = read_registry();
  registry[model.name] = {{"directory", model.directory.string()},
                          {"gguf", model.gguf.string()},
                          {"sha256", model.sha256},
                          {"architecture", model.architecture},
                          {"model_type", model.model_type},
                          {"general_name", model.general_name},
                          {"parameters", model.parameters},
                          {"bytes_on_disk", model.bytes_on_disk},
                          {"quantization", model.quantization},
                          {"convert_seconds", model.convert_seconds},
                          {"converter_format", kConverterFormat}};
  fs::create_directories(model_cache_root());
  write_json_file(registry_path(), registry);
}

namespace {

PulledModel from_record(const std::string& name, const nlohmann::json& record) {
  PulledModel model;
  model.name = name;
  model.directory = record.value("directory", "");
  model.gguf = record.value("gguf", "");
  model.sha256 = record.value("sha256", "");
  model.architecture = record.value("architecture", "");
  model.model_type = record.value("model_type", "");
  model.general_name = record.value("general_name", "");
  model.parameters = record.value("parameters", std::uint64_t{0});
  model.bytes_on_disk = record.value("bytes_on_disk", std::uint64_t{0});
  model.quantization = record.value("quantization", "");
  model.convert_seconds = record.value("convert_seconds", 0.0);
  return model;
}

// A record counts only while its converted directory is intact.
bool usable(const PulledModel& model) {
  return fs::is_regular_file(model.directory / "config.json") &&
         fs::is_regular_file(model.directory / "model.safetensors");
}

std::string known_names() {
  std::string names;
  for (const auto& entry : model_catalog()) names += (names.empty() ? "" : ", ") + entry.name;
  return names;
}

}  // namespace

std::optional<PulledModel> find_pulled_model(const std::string& name) {
  auto registry = read_registry();
  if (!registry.contains(name)) return std::nullopt;
  auto model = from_record(name, registry[name]);
  if (!usable(model)) return std::nullopt;
  return model;
}

std::vector<PulledModel> pulled_models() {
  std::vector<PulledModel> models;
  auto registry = read_registry();
  for (const auto& [name, record] : registry.items()) {
    auto model = from_record(name, record);
    if (usable(model)) models.push_back(model);
  }
  return models;
}

fs::path resolve_model_path(const std::string& name_or_dir) {
  if (fs::is_directory(name_or_dir)) return name_or_dir;
  if (auto model = find_pulled_model(name_or_dir)) return model->directory;
  if (find_catalog_entry(name_or_dir) != nullptr) {
    throw Error("model '" + name_or_dir + "' is not pulled yet: run `mlx-cpp pull " + name_or_dir +
                "`");
  }
  throw Error("model '" + name_or_dir + "' is neither a directory nor a known model name (" +
              known_names() + "; pull one with `mlx-cpp pull NAME`)");
}

}  // namespace mlx_cpp
