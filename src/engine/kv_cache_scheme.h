#pragma once
// How a sequence keeps its keys and values: in the model's float dtype, or
// quantized (affine, mlx-lm's kv_bits / kv_group_size) once a layer's cache
// holds `quantized_start` tokens (mlx-lm's quantized_kv_start), on every
// layer but those kept in float. Caches switch after a forward, as mlx-lm's
// maybe_quantize_kv_cache switches them after each model call, so the
// stock path stays bit-exact with generate_step(kv_bits=...). Sliding-window
// layers stay in float: their caches are bounded by the window, and mlx-lm
// has no quantized rotating cache to hold them to.
#include <optional>
#include <string>
#include <vector>

#include "model/kv_cache.h"

namespace mlx_cpp {

class LanguageModel;

// mlx-lm's default quantized_kv_start.
constexpr int kDefaultQuantizedKvStart = 5000;

struct KvCacheScheme {
  std::optional<KvQuantization> quantization;  // nullopt: float caches
  int quantized_start = kDefaultQuantizedKvStart;
  // Layers kept in float; negative indices count from the last (-1).
  std::vector<int> float_layers;

  bool quantized() const { return quantization.has_value(); }
  // Whether layer `layer` of `layers` is quantized under this scheme.
  bool quantizes_layer(int layer, int layers) const;
  // Part of the prefix cache's key: caches made under different schemes
  // never stand in for each other.
  std::string signature() const;
  bool operator==(const KvCacheScheme&) const = default;
};

// Throws Error naming the problem: bits other than 2, 3, 4, 5, 6 or 8 (2,
// 3, 4 or 8 for TurboQuant), a group size other than 32, 64 or 128 or not
// dividing the head dimension, a negative start, a float layer outside the
// model, a model whose attention cannot read quantized keys, or TurboQuant
// off the CPU.
void validate_kv_cache_scheme(const KvCacheScheme& scheme, const LanguageModel& model);

// "affine" or "turbo" (--kv-scheme, a request's "kv_scheme"); throws Error
// naming the value otherwise. In kv_packing_name.cpp, which request parsing
// links alone.
kernels::KvPacking parse_kv_packing(const std::string& name);
// Its name: "affine" or "turbo".
const char* kv_packing_name(kernels::KvPacking packing);

// Parses a list of layers such as "0,1,-1" (--kv-float-layers).
std::vector<int> parse_layer_list(const std::string& text);

// Replaces each cache of `caches` the scheme quantizes that holds at least
// quantized_start tokens by its quantized form.
void apply_kv_cache_scheme(CacheList& caches, const KvCacheScheme& scheme);

}  // namespace mlx_cpp
