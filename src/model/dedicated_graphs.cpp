#include "model/dedicated_graphs.h"

#include "model/architectures.h"
#include "model/gemma4_config.h"
#include "model/gemma4_text.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace {

std::string describe_gemma4(const ConfigReader& reader) {
  const auto config = read_gemma4_config(reader);
  int sliding = 0;
  for (const auto& layer : config.layers) sliding += layer.sliding;
  const auto& full = config.layers.back();
  std::string text = std::to_string(config.layers.size()) + " layers (" + std::to_string(sliding) +
                     " sliding), hidden " + std::to_string(config.hidden_size) + ", " +
                     std::to_string(config.num_heads) + " heads of " +
                     std::to_string(config.layers.front().head_dim) +
                     " (full: " + std::to_string(full.head_dim) + "), vocab " +
                     std::to_string(config.vocab_size);
  const int shared = static_cast<int>(config.layers.size()) - config.first_shared_layer;
  if (shared > 0) text += ", the last " + std::to_string(shared) + " layers share earlier keys";
  if (config.per_layer_input_size > 0)
    text += ", per-layer inputs of " + std::to_string(config.per_layer_input_size);
  if (config.experts)
    text += ", " + std::to_string(config.experts->num_experts) + " experts (" +
            std::to_string(config.experts->top_k) + " per token) beside each MLP";
  return text;
}

std::unique_ptr<LanguageModel> build_gemma4(const nlohmann::json& config, WeightStore& weights,
                                            const QuantizationConfig& quantization,
                                            const LoadOptions& options) {
  // What mlx-lm's sanitize drops: the multimodal wrapper's other towers.
  for (const char* prefix : {"vision_tower.", "multi_modal_projector.", "audio_tower.",
                             "embed_audio.", "embed_vision.", "vision_embedder."})
    weights.discard_prefix(prefix);
  ConfigReader reader(config);
  return std::make_unique<Gemma4Text>(read_gemma4_config(reader), weights, quantization,
                                      options.kernels);
}

const std::vector<DedicatedGraph>& graphs() {
  static const std::vector<DedicatedGraph> all = {
      {"gemma4_text", describe_gemma4, build_gemma4},
      // The multimodal wrapper's text stack (its text_config is flattened
      // into the config when it is read).
      {"gemma4", describe_gemma4, build_gemma4},
  };
  return all;
}

}  // namespace

const DedicatedGraph* find_dedicated_graph(const std::string& model_type) {
  for (const auto& graph : graphs())
    if (graph.model_type == model_type) return &graph;
  return nullptr;
}

const DedicatedGraph* dedicated_graph_of(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    return nullptr;
  return find_dedicated_graph(remap_model_type(config["model_type"].get<std::string>()));
}

std::vector<std::string> dedicated_model_types() {
  std::vector<std::string> names;
  for (const auto& graph : graphs()) names.push_back(graph.model_type);
  return names;
}

}  // namespace mlx_cpp
