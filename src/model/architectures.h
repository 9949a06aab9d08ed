#pragma once
// The descriptor table: one short builder per supported model_type turns a
// config.json into a TransformerSpec. Adding an architecture of the llama
// family is one entry here; a model that needs its own graph gets a dedicated
// module instead, and dispatch tries that first.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/transformer_spec.h"

namespace mlx_cpp {

// model_type values after mlx-lm's remapping: the dedicated graphs'
// (model/dedicated_graphs.h), then the descriptor table's in table order.
std::vector<std::string> supported_model_types();

// Applies mlx-lm's MODEL_REMAPPING (mistral → llama, ...).
std::string remap_model_type(const std::string& model_type);

// Up to three supported types nearest to an unsupported one (by edit
// distance; qwen3 for qwen3_moe), nearest first.
std::vector<std::string> closest_model_types(const std::string& model_type);

// Builds the generic graph's spec for config["model_type"] (a type with a
// dedicated graph has none); throws Error naming the
// closest supported types and listing all for an unknown one, or naming a
// missing/invalid field.
// With keys_read, the config keys its builder asked for.
TransformerSpec build_transformer_spec(const nlohmann::json& config,
                                       std::set<std::string>* keys_read = nullptr);

}  // namespace mlx_cpp
