#pragma once
// How every command reads --model: a model directory, or the name of a
// model in the local cache (see `mlx-cpp models`).
#include <filesystem>
#include <string>

#include "model/transformer_spec.h"

namespace mlx_cpp::cli {

inline constexpr const char* kDefaultModel = "smollm2-135m-instruct";

std::filesystem::path resolve_model_argument(const std::string& name_or_directory);

// "fast" (own kernels, the default) or "stock" (bit-exact with mlx-lm).
KernelMode parse_kernel_mode(const std::string& name);

}  // namespace mlx_cpp::cli
