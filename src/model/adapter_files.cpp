#include "model/adapter_files.h"

#include <mlx/ops.h>

#include <fstream>
#include <iterator>

#include "io/error.h"
#include "io/gguf/sha256.h"
#include "io/json_file.h"
#include "io/safetensors_file.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
T number_field(const nlohmann::json& parent, const char* key, T fallback,
               const std::filesystem::path& file) {
  if (!parent.contains(key) || parent[key].is_null()) return fallback;
  if (!parent[key].is_number())
    throw Error(file.string() + ": " + key + " must be a number, not " + parent[key].dump());
  return parent[key].get<T>();
}

void read_lora_parameters(const nlohmann::json& config, const std::filesystem::path& file,
                          AdapterFiles& files) {
  if (!config.contains("lora_parameters") || !config["lora_parameters"].is_object())
    throw Error(file.string() + ": lora_parameters (rank, scale, dropout) is missing");
  const auto& parameters = config["lora_parameters"];
  // mlx-lm names the factor "scale"; other trainers' "alpha" is not it.
  if (!parameters.contains("scale"))
    throw Error(file.string() + ": lora_parameters has no \"scale\"" +
                (parameters.contains("alpha")
                     ? " (it has \"alpha\": mlx-lm's adapters give the factor itself as scale)"
                     : ""));
  files.rank = number_field<int>(parameters, "rank", files.rank, file);
  files.scale = number_field<float>(parameters, "scale", files.scale, file);
  files.dropout = number_field<float>(parameters, "dropout", files.dropout, file);
  if (files.rank < 1) throw Error(file.string() + ": rank must be at least 1");
  if (parameters.contains("keys") && !parameters["keys"].is_null()) {
    const auto& keys = parameters["keys"];
    if (!keys.is_array()) throw Error(file.string() + ": keys must be a list of module paths");
    files.keys.emplace();
    for (const auto& key : keys) {
      if (!key.is_string()) throw Error(file.string() + ": keys must be a list of module paths");
      files.keys->push_back(key.get<std::string>());
    }
  }
}

}  // namespace

AdapterFiles read_adapter_directory(const std::filesystem::path& directory) {
  if (!std::filesystem::is_directory(directory))
    throw Error("adapter directory " + directory.string() + " does not exist");
  AdapterFiles files;
  files.directory = std::filesystem::absolute(directory).lexically_normal();
  const auto config_path = directory / "adapter_config.json";
  const auto tensors_path = directory / "adapters.safetensors";
  if (!std::filesystem::exists(config_path))
    throw Error("adapter directory " + directory.string() + " has no adapter_config.json");
  if (!std::filesystem::exists(tensors_path))
    throw Error("adapter directory " + directory.string() + " has no adapters.safetensors");
  files.config = read_json_file(config_path);
  const auto& config = files.config;
  if (!config.is_object()) throw Error(config_path.string() + ": expected a JSON object");
  files.fine_tune_type = config.value("fine_tune_type", std::string("lora"));
  if (files.fine_tune_type == "full")
    throw Error(config_path.string() +
                ": a full fine-tune holds whole weights, not an adapter; fuse it into the model "
                "(mlx_lm.fuse) and load the result as a model");
  if (files.fine_tune_type != "lora" && files.fine_tune_type != "dora")
    throw Error(config_path.string() + ": unknown fine_tune_type \"" + files.fine_tune_type +
                "\" (lora or dora)");
  files.num_layers = number_field<int>(config, "num_layers", files.num_layers, config_path);
  read_lora_parameters(config, config_path, files);

  files.tensors = load_safetensors_checked(tensors_path);
  for (auto& [name, tensor] : files.tensors) {
    if (!mx::issubdtype(tensor.dtype(), mx::floating))
      throw Error(tensors_path.string() + ": " + name + " is not a float tensor");
  }
  const auto config_bytes = file_bytes(config_path), tensor_bytes = file_bytes(tensors_path);
  files.bytes = tensor_bytes.size();
  files.fingerprint = gguf::sha256_parts({config_bytes, tensor_bytes});
  return files;
}

}  // namespace mlx_cpp
