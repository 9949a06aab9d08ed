#pragma once
// The registry's first tier: model_types served by a graph of their own
// (a LanguageModel in its own file, named after the type) rather than by the
// descriptor table's generic graph. Dispatch asks here first, so a generic
// builder never shadows a dedicated graph.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/config_reader.h"
#include "model/language_model.h"
#include "model/quantization.h"

namespace mlx_cpp {

class WeightStore;

struct DedicatedGraph {
  std::string model_type;
  // Reads the config (the keys it asks for are recorded by the reader) and
  // says the model's shape in one line; throws Error for a config it
  // cannot serve.
  std::function<std::string(const ConfigReader&)> describe;
  // Builds the model from the config and the checkpoint's tensors (after
  // the loader's common renames); throws Error naming what does not fit.
  std::function<std::unique_ptr<LanguageModel>(const nlohmann::json& config, WeightStore& weights,
                                               const QuantizationConfig& quantization,
                                               const LoadOptions& options)>
      build;
};

// The dedicated graph of a model_type (after mlx-lm's remapping), or null.
const DedicatedGraph* find_dedicated_graph(const std::string& model_type);

// The registry's first tier for a config.json: its model_type's (after
// mlx-lm's remapping) dedicated graph, or null (no string model_type too).
const DedicatedGraph* dedicated_graph_of(const nlohmann::json& config);

std::vector<std::string> dedicated_model_types();

}  // namespace mlx_cpp
