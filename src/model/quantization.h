#pragma once
// Which modules are quantized and how, following mlx-lm's load rules: a
// module named in the config's "quantization" block uses that entry (a dict
// of parameters, or false for "keep dense"); any other module is quantized
// iff the checkpoint has "<path>.scales", with group size and bits read off
// the tensor shapes.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mlx_cpp {

class WeightStore;

struct QuantizationParams {
  int group_size = 64;
  int bits = 4;
  std::string mode = "affine";
};

class QuantizationConfig {
 public:
  // Parses config["quantization"] (or none). Throws Error on a malformed
  // block: unsupported bits / group size / mode, wrong types.
  static QuantizationConfig from_model_config(const nlohmann::json& config);

  // Parameters for the module at `path` whose dense weight is [out, in_dims].
  std::optional<QuantizationParams> for_module(const std::string& path, int in_dims,
                                               const WeightStore& weights) const;

  // What config.json says of the module, as mlx-lm's loader reads it: its
  // own entry, else the default (nullopt: kept dense, or no quantization).
  std::optional<QuantizationParams> configured(const std::string& path) const;

  bool enabled() const { return default_.has_value(); }
  // Renames the modules named in the config (as the checkpoint's tensors are).
  void rename_modules(const std::function<std::string(const std::string&)>& rename);

 private:
  std::optional<QuantizationParams> default_;
  std::map<std::string, std::optional<QuantizationParams>> overrides_;
};

// Throws unless bits ∈ {2,3,4,5,6,8}, group_size ∈ {32,64,128}, mode affine.
void validate_quantization(const QuantizationParams& params, const std::string& where);

}  // namespace mlx_cpp
