#include "model/quantization.h"

#include "io/error.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace {

QuantizationParams parse_params(const nlohmann::json& block, const QuantizationParams& fallback,
                                const std::string& where) {
  QuantizationParams params = fallback;
  auto read_int = [&](const char* key, int& target) {
    if (!block.contains(key)) return;
    if (!block[key].is_number_integer()) throw Error(where + ": '" + key + "' must be an integer");
    target = block[key].get<int>();
  };
  read_int("group_size", params.group_size);
  read_int("bits", params.bits);
  if (block.contains("mode")) {
    if (!block["mode"].is_string()) throw Error(where + ": 'mode' must be a string");
    params.mode = block["mode"].get<std::string>();
  }
  validate_quantization(params, where);
  return params;
}

}  // namespace

void validate_quantization(const QuantizationParams& params, const std::string& where) {
  if (params.mode != "affine")
    throw Error(where + ": quantization mode '" + params.mode + "' is not supported (affine only)");
  const int bits = params.bits;
  if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
    throw Error(where + ": " + std::to_string(bits) + "-bit quantization is not supported " +
                "(2, 3, 4, 5, 6 or 8)");
  const int group = params.group_size;
  if (group != 32 && group != 64 && group != 128)
    throw Error(where + ": group size " + std::to_string(group) + " is not supported " +
                "(32, 64 or 128)");
}

QuantizationConfig QuantizationConfig::from_model_config(const nlohmann::json& config) {
  QuantizationConfig result;
  if (!config.contains("quantization") || config["quantization"].is_null()) {
    if (config.contains("quantization_config") && config["quantization_config"].is_object())
      throw Error("config.json: quantization_config without an MLX 'quantization' block is " +
                  std::string("not supported (convert the checkpoint with mlx-lm first)"));
    return result;
  }
  const auto& block = config["quantization"];
  if (!block.is_object()) throw Error("config.json: 'quantization' must be an object");
  if (!block.contains("group_size") || !block.contains("bits"))
    throw Error("config.json: 'quantization' needs group_size and bits");
  result.default_ = parse_params(block, QuantizationParams{}, "config.json quantization");
  for (const auto& [key, value] : block.items()) {
    if (value.is_boolean()) {
      if (value.get<bool>())
        result.overrides_[key] = result.default_;
      else
        result.overrides_[key] = std::nullopt;
    } else if (value.is_object()) {
      result.overrides_[key] = parse_params(value, *result.default_, "quantization of " + key);
    }
  }
  return result;
}

std::optional<QuantizationParams> QuantizationConfig::for_module(const std::string& path,
                                                                 int in_dims,
                                                                 const WeightStore& weights) const {
  if (!default_) {
    if (weights.contains(path + ".scales"))
      throw Error(path + " is quantized but config.json has no 'quantization' block");
    return std::nullopt;
  }
  auto found = overrides_.find(path);
  if (found != overrides_.end()) return found->second;
  const auto* scales = weights.find(path + ".scales");
  const auto* weight = weights.find(path + ".weight");
  if (!scales || !weight) return std::nullopt;
  if (scales->ndim() < 1 || weight->ndim() < 1 || scales->shape(-1) == 0)
    throw Error(path + ": malformed quantized tensors");
  // Read group size and bits off the packed shapes, as mlx-lm does.
  QuantizationParams params = *default_;
  params.group_size = in_dims / scales->shape(-1);
  params.bits = weight->shape(-1) * 32 / in_dims;
  validate_quantization(params, "quantized tensors of " + path);
  return params;
}

std::optional<QuantizationParams> QuantizationConfig::configured(const std::string& path) const {
  auto found = overrides_.find(path);
  return found != overrides_.end() ? found->second : default_;
}

void QuantizationConfig::rename_modules(
    const std::function<std::string(const std::string&)>& rename) {
  std::map<std::string, std::optional<QuantizationParams>> renamed;
  for (auto& [path, params] : overrides_) renamed.emplace(rename(path), params);
  overrides_ = std::move(renamed);
}

}  // namespace mlx_cpp
