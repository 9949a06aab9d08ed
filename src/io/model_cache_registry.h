#pragma once
// Registry internals shared by model_cache.cpp and model_cache_pull.cpp.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/model_cache.h"

namespace mlx_cpp {

// Bumped when `convert` writes different files for the same GGUF (2: the
// legacy quant types keep float16 scales; 3: Q6_K requantized to 8 bits;
// 4: Q6_K requantized to 6 bits);
// `pull` converts again a model recorded with an older format (or none).
constexpr int kConverterFormat = 4;

std::filesystem::path registry_path();
nlohmann::json read_registry();
// Adds or replaces one model's record (atomic write of registry.json).
void record_pulled_model(const PulledModel& model);

}  // namespace mlx_cpp
