#pragma once
// What `mlx-cpp inspect DIR` reports about a checkpoint without running
// it: whether a model_type is supported and by which part of the graph,
// the shape its config gives, the config keys the builder did not read,
// and whether the tensors match what the model expects (the load-time
// audit, read off the safetensors headers: no weight data is loaded).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp {

struct ModelInspection {
  std::string model_type;
  bool supported = false;
  // "dedicated", "generic dense" or "generic mixture of experts"; empty
  // when unsupported.
  std::string tier;
  std::string refusal;  // why it is not supported (the loader's message)
  std::string shape;    // layers, widths, heads, experts: one line
  std::vector<std::string> unread_config_keys;
  std::optional<std::string> weight_problems;  // the audit's message
  size_t parameter_count = 0;
};

ModelInspection inspect_model(const std::filesystem::path& directory);

}  // namespace mlx_cpp
