#include "model/fuse_adapter.h"

#include <mlx/linalg.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <map>

#include "io/error.h"
#include "io/json_file.h"
#include "io/safetensors_file.h"
#include "io/safetensors_image.h"
#include "model/adapter_binding.h"
#include "model/adapter_files.h"
#include "model/language_model.h"
#include "model/quantization.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

using Tensors = std::map<std::string, mx::array>;

// mlx-lm's save_model: shards of at most 5 GiB.
constexpr size_t kShardBytes = size_t(5) << 30;

mx::array dequantized(const Tensors& tensors, const std::string& module,
                      const QuantizationParams& params) {
  return mx::dequantize(tensors.at(module + ".weight"), tensors.at(module + ".scales"),
                        tensors.at(module + ".biases"), params.group_size, params.bits,
                        params.mode);
}

// W + the adapter's update, as LoRALinear / LoRASwitchLinear / DoRALinear
// .fuse() compute it.
mx::array fused_weight(const mx::array& weight, const AdapterModuleTensors& update, float scale,
                       bool dora) {
  const auto& a = *update.a;
  const auto& b = *update.b;
  if (weight.ndim() == 3) {  // experts: [E, out, r] @ [E, r, in]
    auto lora_b = mx::multiply(mx::array(scale, b.dtype()), b);
    auto lora_a = mx::reshape(a, {weight.shape(0), -1, weight.shape(2)});
    return mx::add(weight, mx::astype(mx::matmul(lora_b, lora_a), weight.dtype()));
  }
  auto delta =
      mx::matmul(mx::multiply(mx::array(scale, b.dtype()), mx::transpose(b)), mx::transpose(a));
  auto adapted = mx::add(weight, mx::astype(delta, weight.dtype()));
  if (!dora) return adapted;
  auto norm_scale = mx::divide(*update.m, mx::linalg::norm(adapted, std::vector<int>{1}));
  return mx::multiply(mx::expand_dims(norm_scale, 1), adapted);
}

// The checkpoint's name of an adapter module: as named, or under the
// multimodal wrapper's prefix.
std::string checkpoint_module(const Tensors& tensors, const std::string& module) {
  for (const auto& candidate : {module, "language_model." + module})
    if (tensors.count(candidate + ".weight")) return candidate;
  throw Error("fuse: the checkpoint has no " + module + ".weight");
}

void write_checkpoint(const Tensors& tensors, const std::filesystem::path& out,
                      FuseReport& report) {
  std::vector<Tensors> shards;
  size_t shard_bytes = 0;
  for (const auto& [name, tensor] : tensors) {
    if (shards.empty() || shard_bytes + tensor.nbytes() > kShardBytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().emplace(name, tensor);
    shard_bytes += tensor.nbytes();
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", nlohmann::json::object()}};
  size_t total = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    const std::string file = shards.size() == 1 ? "model.safetensors" : name;
    SafetensorsImage image;
    image.metadata["format"] = "mlx";
    for (auto& [tensor_name, tensor] : shards[i]) {
      auto contiguous = mx::contiguous(tensor);
      mx::eval(contiguous);
      image.add(tensor_name, contiguous);
      index["weight_map"][tensor_name] = file;
      total += contiguous.nbytes();
    }
    image.write(out / file);
    report.bytes_written += image.data().size();
  }
  index["metadata"]["total_size"] = total;
  write_json_file(out / "model.safetensors.index.json", index, 4);
}

// Everything beside the weights and config (tokenizer, template,
// generation config), as mlx-lm's save writes them.
void copy_other_files(const std::filesystem::path& from, const std::filesystem::path& out) {
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    const auto name = entry.path().filename().string();
    const bool weights =
        name.rfind("model", 0) == 0 &&
        (entry.path().extension() == ".safetensors" || name == "model.safetensors.index.json");
    if (!entry.is_regular_file() || weights || name == "config.json") continue;
    std::filesystem::copy_file(entry.path(), out / name,
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace

FuseReport fuse_adapter(const std::filesystem::path& model_directory,
                        const std::filesystem::path& adapter_directory,
                        const std::filesystem::path& out, bool dequantize) {
  const auto files = read_adapter_directory(adapter_directory);
  {  // The checks loading it runs: a tensor that does not fit is refused here.
    auto loaded = load_model(model_directory, {KernelMode::stock, false});
    loaded.model->bind_adapter(files, adapter_directory.filename().string());
  }
  if (std::filesystem::exists(out) && !std::filesystem::is_empty(out))
    throw Error("fuse: " + out.string() + " exists and is not empty");
  auto config = read_json_file(model_directory / "config.json");
  const auto quantization_config = QuantizationConfig::from_model_config(config);
  Tensors tensors;
  for (const auto& file : find_weight_files(model_directory))
    for (auto& [name, tensor] : load_safetensors_checked(file)) tensors.emplace(name, tensor);

  FuseReport report;
  for (const auto& [adapter_module, update] : adapter_modules(files)) {
    const auto module = checkpoint_module(tensors, adapter_module);
    const auto quantization =
        tensors.count(module + ".scales") ? quantization_config.configured(module) : std::nullopt;
    auto weight =
        quantization ? dequantized(tensors, module, *quantization) : tensors.at(module + ".weight");
    weight = fused_weight(weight, update, files.scale, files.fine_tune_type == "dora");
    if (quantization && !dequantize) {
      auto parts =
          mx::quantize(weight, quantization->group_size, quantization->bits, quantization->mode);
      tensors.insert_or_assign(module + ".weight", parts[0]);
      tensors.insert_or_assign(module + ".scales", parts[1]);
      tensors.insert_or_assign(module + ".biases", parts[2]);
    } else {
      tensors.insert_or_assign(module + ".weight", weight);
      tensors.erase(module + ".scales");
      tensors.erase(module + ".biases");
    }
    ++report.fused_projections;
  }
  if (dequantize) {  // mlx-lm's dequantize_model: every quantized module
    std::vector<std::string> quantized;
    for (const auto& [name, tensor] : tensors)
      if (name.size() > 7 && name.compare(name.size() - 7, 7, ".scales") == 0)
        quantized.push_back(name.substr(0, name.size() - 7));
    for (const auto& module : quantized) {
      auto params = quantization_config.configured(module);
      if (!params)
        throw Error("fuse: " + module + " has scales but the config does not quantize it");
      tensors.insert_or_assign(module + ".weight", dequantized(tensors, module, *params));
      tensors.erase(module + ".scales");
      tensors.erase(module + ".biases");
      ++report.dequantized_modules;
    }
    config.erase("quantization");
    config.erase("quantization_config");
  }
  std::filesystem::create_directories(out);
  write_checkpoint(tensors, out, report);
  write_json_file(out / "config.json", config, 4);
  copy_other_files(model_directory, out);
  return report;
}

}  // namespace mlx_cpp
