#include "engine/kv_cache_scheme.h"

#include <mlx/device.h>

#include <algorithm>

#include "io/error.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace mx = mlx::core;

bool KvCacheScheme::quantizes_layer(int layer, int layers) const {
  if (!quantization) return false;
  return std::none_of(float_layers.begin(), float_layers.end(), [&](int kept) {
    return kept == layer || (kept < 0 && layers + kept == layer);
  });
}

std::string KvCacheScheme::signature() const {
  if (!quantization) return "float";
  std::string signature = std::string(kv_packing_name(quantization->packing)) +
                          "(bits=" + std::to_string(quantization->bits) +
                          ",group=" + std::to_string(quantization->group_size) +
                          ",start=" + std::to_string(quantized_start) + ",float_layers=";
  for (int layer : float_layers) signature += std::to_string(layer) + " ";
  return signature + ")";
}

void validate_kv_cache_scheme(const KvCacheScheme& scheme, const LanguageModel& model) {
  if (!scheme.quantization) return;
  const auto& quantization = *scheme.quantization;
  const int bits = quantization.bits;
  const bool turbo = quantization.packing == kernels::KvPacking::turbo;
  if (turbo && bits != 2 && bits != 3 && bits != 4 && bits != 8)
    throw Error("TurboQuant KV cache bits must be 2, 3, 4 or 8 (got " + std::to_string(bits) + ")");
  if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
    throw Error("KV cache bits must be 2, 3, 4, 5, 6 or 8 (got " + std::to_string(bits) + ")");
  if (turbo && mx::default_device() != mx::Device::cpu)
    throw Error(
        "TurboQuant KV caches run on the CPU only (use --device cpu, or --kv-scheme affine)");
  const int group = quantization.group_size;
  if (group != 32 && group != 64 && group != 128)
    throw Error("KV cache group size must be 32, 64 or 128 (got " + std::to_string(group) + ")");
  if (scheme.quantized_start < 0)
    throw Error("the quantized KV start must be >= 0 (got " +
                std::to_string(scheme.quantized_start) + ")");
  const auto caches = model.make_caches();
  const int layers = static_cast<int>(caches.size());
  for (int layer : scheme.float_layers)
    if (layer >= layers || layer < -layers)
      throw Error("KV float layer " + std::to_string(layer) + " is outside the model's " +
                  std::to_string(layers) + " layers");
  // A scheme that leaves every layer in float asks nothing of attention.
  bool quantizes_any = false;
  for (int layer = 0; layer < layers; ++layer)
    quantizes_any = quantizes_any || (scheme.quantizes_layer(layer, layers) &&
                                      caches[layer]->quantized(quantization) != nullptr);
  if (!quantizes_any) return;
  if (auto refusal = model.quantized_kv_refusal(quantization)) throw Error(*refusal);
}

std::vector<int> parse_layer_list(const std::string& text) {
  std::vector<int> layers;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const auto item = text.substr(start, comma - start);
    std::size_t used = 0;
    int layer = 0;
    try {
      layer = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw Error("a layer list is integers separated by commas, e.g. 0,1,-1 (got '" + text + "')");
    layers.push_back(layer);
    start = comma + 1;
  }
  return layers;
}

void apply_kv_cache_scheme(CacheList& caches, const KvCacheScheme& scheme) {
  if (!scheme.quantization) return;
  const int layers = static_cast<int>(caches.size());
  for (int layer = 0; layer < layers; ++layer) {
    auto& cache = caches[layer];
    if (cache->as_quantized() || cache->offset() < scheme.quantized_start ||
        !scheme.quantizes_layer(layer, layers))
      continue;
    if (auto quantized = cache->quantized(*scheme.quantization)) cache = std::move(quantized);
  }
}

}  // namespace mlx_cpp
