#pragma once
// Safetensors checkpoints: a bounds-checked look at the header before MLX
// maps the tensors, so a truncated or corrupted file gives a one-line error
// naming the file and the tensor instead of an exception from deep inside a
// lazy load.
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <mlx/array.h>

namespace mlx_cpp {

struct SafetensorsTensorInfo {
  std::string dtype;  // as written in the header: "BF16", "U32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::unordered_map<std::string, SafetensorsTensorInfo> tensors;
  std::unordered_map<std::string, std::string> metadata;
};

// Parses and validates the header: length within the file, JSON well formed,
// known dtypes, offsets inside the data section, byte size = shape x dtype.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// Validates the header, then loads the tensors lazily through MLX (no dtype
// conversion: arrays keep the stored dtype, as mlx-lm does).
std::unordered_map<std::string, mlx::core::array> load_safetensors_checked(
    const std::filesystem::path& path);

// The weight files of a checkpoint directory: model.safetensors or
// model-XXXXX-of-YYYYY.safetensors shards (any model*.safetensors, like mlx-lm),
// sorted by name. Throws when there is none.
std::vector<std::filesystem::path> find_weight_files(const std::filesystem::path& directory);

}  // namespace mlx_cpp
