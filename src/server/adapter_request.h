#pragma once
// Which adapters a request runs with: its "adapter" field ("name",
// "a+b", "a*0.5+b", or a list of names and {"name", "scale"} objects), or,
// for clients that can only set the model's name, "model": "<served
// model>:<adapters>". The names are resolved against the mounted adapters
// later (the engine's registry).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/adapter_registry.h"

namespace mlx_cpp::server {

// Throws ApiError 400 naming the field for a malformed choice, or for
// adapters given both ways.
std::vector<AdapterChoice> parse_adapter_choices(const nlohmann::ordered_json& body,
                                                 const std::string& model_id);

}  // namespace mlx_cpp::server
