#pragma once
// Merges an adapter into a checkpoint's weights as mlx_lm.fuse does: each
// adapted projection's weight W (dequantized if quantized) becomes
// W + (scale · bᵀ) aᵀ in W's dtype (DoRA: then each row rescaled to its
// magnitude m), quantized again with the projection's group size and
// width unless dequantize is asked, which also dequantizes every other
// quantized module. The result is a checkpoint directory mlx-lm and
// mlx-cpp load: the other tensors as they were, config.json, the
// tokenizer and template files copied.
#include <filesystem>

namespace mlx_cpp {

struct FuseReport {
  int fused_projections = 0;
  int dequantized_modules = 0;
  size_t bytes_written = 0;
};

// Throws Error when the adapter does not fit the model (the same checks
// as loading it) or a file cannot be written; `out` must not exist or be
// an empty directory.
FuseReport fuse_adapter(const std::filesystem::path& model_directory,
                        const std::filesystem::path& adapter_directory,
                        const std::filesystem::path& out, bool dequantize);

}  // namespace mlx_cpp
