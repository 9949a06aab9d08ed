#pragma once
// An adapter directory as mlx-lm's trainer writes it (and mlx-cpp's):
// adapter_config.json (fine_tune_type, num_layers, lora_parameters with
// rank, scale, dropout and optional keys) and adapters.safetensors (each
// adapted module's lora_a, lora_b and, for DoRA, m).
#include <mlx/array.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlx_cpp {

struct AdapterFiles {
  std::filesystem::path directory;
  nlohmann::json config;       // adapter_config.json as written
  std::string fine_tune_type;  // "lora" or "dora"
  // Adapted blocks, counted from the last: mlx-lm's layers[-max(n, 0):],
  // so 0, a negative count or one past the depth adapts every block.
  int num_layers = 16;
  int rank = 8;
  float scale = 20.0f;
  float dropout = 0.0f;
  // Module paths within a block ("self_attn.q_proj") or from the model's
  // root ("lm_head"); nullopt: every projection of the adapted blocks.
  std::optional<std::vector<std::string>> keys;
  std::unordered_map<std::string, mlx::core::array> tensors;
  // SHA-256 (hex) of the config and tensors' bytes: tells two adapters
  // mounted under one name apart.
  std::string fingerprint;
  size_t bytes = 0;  // of adapters.safetensors
};

// Reads and checks an adapter directory; throws Error naming the file and
// the problem (missing file, malformed JSON, unknown fine_tune_type, a full
// fine-tune, parameters of the wrong type).
AdapterFiles read_adapter_directory(const std::filesystem::path& directory);

}  // namespace mlx_cpp
