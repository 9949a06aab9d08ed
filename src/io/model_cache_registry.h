#pragma once
// Registry internals shared by model_cache.cpp and model_cache_pull.cpp.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/model_cache.h"

namespace mlx_cpp {

std::filesystem::path registry_path();
nlohmann::json read_registry();
// Adds or replaces one model's record (atomic write of registry.json).
void record_pulled_model(const PulledModel& model);

}  // namespace mlx_cpp
