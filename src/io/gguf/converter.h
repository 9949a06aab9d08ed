#pragma once
// GGUF file -> MLX model directory (config.json, model.safetensors, tokenizer
// files) that mlx-cpp and mlx-lm both load. See docs/models.md for the
// mapping rules, dtypes and measured conversions.
#include <mlx/dtype.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mlx_cpp::gguf {

struct ConvertOptions {
  std::optional<int> bits;                      // requantization bits (exact carries keep theirs)
  int group_size = 64;                          // requantization group size
  std::optional<mlx::core::Dtype> dense_dtype;  // set: write every tensor dense
};

struct ConversionSummary {
  std::string architecture;  // general.architecture
  std::string model_type;    // config.json model_type
  std::string name;          // general.name
  std::uint64_t parameters = 0;
  std::uint64_t bytes_on_disk = 0;
  std::string quantization;       // e.g. "affine 4-bit g32; 8-bit g32 x1"
  nlohmann::json source_types;    // GGML type -> tensor count
  std::size_t exact_tensors = 0;  // carried without requantization
  std::size_t requantized_tensors = 0;
  double seconds = 0;
};

// Writes the directory atomically: into a sibling temporary directory that is
// renamed to `out_dir` at the end. `out_dir` must not exist or be empty.
ConversionSummary convert_gguf(const std::filesystem::path& gguf_path,
                               const std::filesystem::path& out_dir, const ConvertOptions& options);

// "bf16"/"bfloat16", "f16"/"float16", "f32"/"float32"; throws otherwise.
mlx::core::Dtype parse_dense_dtype(const std::string& name);

}  // namespace mlx_cpp::gguf
