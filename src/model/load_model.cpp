#include <filesystem>

#include "io/error.h"
#include "io/json_file.h"
#include "model/architectures.h"
#include "model/config_reader.h"
#include "model/dedicated_graphs.h"
#include "model/dense_transformer.h"
#include "model/language_model.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace {

std::vector<int> eos_ids(const nlohmann::json& config) {
  std::vector<int> ids;
  if (!config.contains("eos_token_id")) return ids;
  const auto& value = config["eos_token_id"];
  if (value.is_number_integer()) ids.push_back(value.get<int>());
  if (value.is_array())
    for (const auto& id : value)
      if (id.is_number_integer()) ids.push_back(id.get<int>());
  return ids;
}

// The descriptor table's spec on the generic graph, its renames and splits
// applied to the tensors first.
std::unique_ptr<LanguageModel> build_generic_model(TransformerSpec spec, WeightStore& weights,
                                                   QuantizationConfig& quantization,
                                                   const LoadOptions& options) {
  if (!spec.weight_names.empty()) {
    auto rename = [&spec](const std::string& name) {
      return rewrite_name(name, spec.weight_names);
    };
    weights.rename(rename);
    quantization.rename_modules(rename);
  }
  for (const auto& projection : spec.fused_projections)
    weights.split_rows(projection.fused, projection.parts, projection.groups);
  for (const auto& prefix : spec.ignored_weight_prefixes) weights.discard_prefix(prefix);
  return std::make_unique<DenseTransformer>(std::move(spec), weights, quantization, options);
}

}  // namespace

nlohmann::json read_model_config(const std::filesystem::path& directory) {
  auto config_path = directory / "config.json";
  if (!std::filesystem::exists(config_path))
    throw Error("no config.json in " + directory.string() + " (not an MLX model directory?)");
  auto config = read_json_file(config_path);
  if (!config.is_object()) throw Error(config_path.string() + " is not a JSON object");
  if (config.contains("text_config") && config["text_config"].is_object()) {
    for (const auto& [key, value] : config["text_config"].items()) config[key] = value;
  }
  auto generation_path = directory / "generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    auto generation = read_json_file(generation_path);
    if (generation.is_object() && generation.contains("eos_token_id") &&
        !generation["eos_token_id"].is_null() && generation["eos_token_id"] != false)
      config["eos_token_id"] = generation["eos_token_id"];
  }
  return config;
}

LoadedModel load_model(const std::filesystem::path& directory, const LoadOptions& options) {
  if (!std::filesystem::is_directory(directory))
    throw Error("model directory " + directory.string() + " does not exist");
  LoadedModel loaded;
  loaded.directory = directory;
  loaded.config = read_model_config(directory);
  // The config is checked before any tensor is read.
  const auto* dedicated = dedicated_graph_of(loaded.config);
  std::optional<TransformerSpec> spec;
  if (dedicated)
    dedicated->describe(ConfigReader(loaded.config));
  else
    spec = build_transformer_spec(loaded.config);
  auto quantization = QuantizationConfig::from_model_config(loaded.config);
  auto weights = WeightStore::from_directory(directory);
  weights.strip_prefix("language_model.");
  // transformers saves a bare base model (an encoder ships without a head)
  // without the "model." its decoder's tensor names carry.
  if (weights.contains("embed_tokens.weight") && !weights.contains("model.embed_tokens.weight"))
    weights.rename([](const std::string& name) { return "model." + name; });
  std::unique_ptr<LanguageModel> model;
  try {
    model = dedicated ? dedicated->build(loaded.config, weights, quantization, options)
                      : build_generic_model(std::move(*spec), weights, quantization, options);
  } catch (const std::exception& error) {
    // A missing or malformed tensor can make the layers fail as they are
    // built (a placeholder has no shape to read): the audit names it.
    if (weights.has_problems()) weights.audit();
    if (dynamic_cast<const Error*>(&error)) throw;
    throw Error("cannot build the model from " + directory.string() + ": " + error.what());
  }
  weights.audit();
  loaded.model = std::move(model);
  loaded.eos_token_ids = eos_ids(loaded.config);
  return loaded;
}

}  // namespace mlx_cpp
