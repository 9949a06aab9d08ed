// cache_from_state: a saved cache's items checked, then the cache made.
// Saved states come from files a user hands over, so every name, type,
// shape and offset is checked before any of it reaches attention.
#include <mlx/array.h>

#include <map>

#include "io/error.h"
#include "kernels/turbo_codec.h"
#include "model/kv_cache.h"
#include "model/quantized_kv_cache.h"
#include "model/recurrent_state_cache.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

bool is_float(mx::Dtype dtype) {
  return dtype == mx::float16 || dtype == mx::bfloat16 || dtype == mx::float32;
}

class StateItems {
 public:
  explicit StateItems(const CacheState& state) : kind_(state.kind) {
    for (const auto& [name, item] : state.items) items_.emplace(name, item);
  }

  const mx::array& array(const std::string& name) const {
    const auto* value = std::get_if<mx::array>(&find(name));
    if (!value) throw Error(describe(name) + " is not an array");
    if (value->ndim() != 4)
      throw Error(describe(name) + " has " + std::to_string(value->ndim()) +
                  " dimensions, not 4 [batch, kv_heads, tokens, head_dim]");
    if (value->shape(0) != 1)
      throw Error(describe(name) + " holds a batch of " + std::to_string(value->shape(0)) +
                  " sequences; one is supported");
    return *value;
  }

  // A recurrent state [1, ...]: one sequence's, float.
  const mx::array& state_array(const std::string& name) const {
    const auto* value = std::get_if<mx::array>(&find(name));
    if (!value) throw Error(describe(name) + " is not an array");
    if (value->ndim() < 2 || value->shape(0) != 1 || !is_float(value->dtype()))
      throw Error(describe(name) + " must be a float array [1, ...] (one sequence's state)");
    return *value;
  }

  bool has(const std::string& name) const { return items_.count(name) > 0; }

  bool is_none(const std::string& name) const {
    return std::holds_alternative<std::monostate>(find(name));
  }

  int integer(const std::string& name) const {
    const auto* value = std::get_if<int>(&find(name));
    if (!value) throw Error(describe(name) + " is not an integer");
    return *value;
  }

  std::string describe(const std::string& name) const { return kind_ + " state item " + name; }

 private:
  const CacheStateItem& find(const std::string& name) const {
    auto it = items_.find(name);
    if (it == items_.end()) throw Error(kind_ + " state lacks item " + name);
    return it->second;
  }
  std::string kind_;
  std::map<std::string, CacheStateItem> items_;
};

// keys and values [1, H, S, D]: float, of one dtype, the same heads and tokens.
void check_float_pair(const StateItems& items, const mx::array& keys, const mx::array& values) {
  if (!is_float(keys.dtype()) || keys.dtype() != values.dtype())
    throw Error(items.describe("0") + ": keys and values must be float arrays of one dtype");
  if (keys.shape(1) != values.shape(1) || keys.shape(2) != values.shape(2))
    throw Error(items.describe("0") + ": keys and values differ in heads or tokens");
}

void check_offset(const StateItems& items, int offset, int capacity) {
  if (offset < 0 || offset > capacity)
    throw Error(items.describe("2") + ": offset " + std::to_string(offset) +
                " outside the storage's " + std::to_string(capacity) + " tokens");
}

std::unique_ptr<KvCache> standard_from(const StateItems& items) {
  const auto& keys = items.array("0");
  const auto& values = items.array("1");
  check_float_pair(items, keys, values);
  const int offset = items.integer("2");
  check_offset(items, offset, keys.shape(2));
  return std::make_unique<StandardKvCache>(keys, values, offset);
}

std::unique_ptr<KvCache> rotating_from(const StateItems& items) {
  const auto& keys = items.array("0");
  const auto& values = items.array("1");
  check_float_pair(items, keys, values);
  const int offset = items.integer("2");
  const int keep = items.integer("3");
  const int max_size = items.integer("4");
  const int index = items.integer("5");
  if (max_size < 1 || keep < 0 || keep >= max_size)
    throw Error(items.describe("4") + ": window " + std::to_string(max_size) + " keeping " +
                std::to_string(keep) + " tokens is not a window");
  if (offset < 0 || index < 0 || index > keys.shape(2) || index > offset)
    throw Error(items.describe("5") + ": ring index " + std::to_string(index) +
                " does not fit offset " + std::to_string(offset) + " and storage of " +
                std::to_string(keys.shape(2)) + " tokens");
  return std::make_unique<RotatingKvCache>(max_size, keep, keys, values, offset, index);
}

// mlx-lm's ArraysCache: its slots "0.0", "0.1", ... (lfm2's convolution
// state, qwen3_5's and its recurrent state) and no padding or lengths; its
// token count comes from the other layers (count_recurrent_tokens in
// prompt_cache_file.cpp).
std::unique_ptr<KvCache> recurrent_state_from(const StateItems& items) {
  std::vector<std::optional<mx::array>> slots;
  while (items.has("0." + std::to_string(slots.size())))
    slots.emplace_back(items.state_array("0." + std::to_string(slots.size())));
  if (slots.empty()) throw Error(items.describe("0.0") + " is missing");
  if (!items.is_none("1") || !items.is_none("2"))
    throw Error(items.describe("1") +
                ": left padding and lengths belong to batches; a saved "
                "prompt holds one sequence");
  return std::make_unique<RecurrentStateCache>(std::move(slots), 0);
}

PackedKv packed_from(const StateItems& items, const std::string& prefix,
                     const KvQuantization& quantization) {
  const bool turbo = quantization.packing == kernels::KvPacking::turbo;
  PackedKv packed{items.array(prefix + ".0"), items.array(prefix + ".1"),
                  turbo ? std::nullopt : std::optional(items.array(prefix + ".2"))};
  if (packed.codes.dtype() != mx::uint32)
    throw Error(items.describe(prefix + ".0") + " must hold uint32 codes");
  if (turbo ? packed.scales.dtype() != mx::float32
            : !is_float(packed.scales.dtype()) || packed.scales.dtype() != packed.biases->dtype())
    throw Error(items.describe(prefix + ".1") + (turbo ? ": norms must be float32"
                                                       : ": scales and biases must be float of "
                                                         "one dtype"));
  if ((packed.biases && packed.scales.shape() != packed.biases->shape()) ||
      packed.codes.ndim() != 4 || packed.scales.ndim() != 4 ||
      packed.codes.shape(1) != packed.scales.shape(1) ||
      packed.codes.shape(2) != packed.scales.shape(2))
    throw Error(items.describe(prefix) + ": codes, scales and biases differ in shape");
  // Words of codes x 32 bits = groups x group size x bits.
  const long long code_bits = 32LL * packed.codes.shape(3);
  const long long dim = 1LL * packed.scales.shape(3) * quantization.group_size;
  if (code_bits != dim * quantization.bits)
    throw Error(items.describe(prefix) + ": " + std::to_string(packed.codes.shape(3)) +
                " code words do not hold " + std::to_string(packed.scales.shape(3)) +
                " groups of " + std::to_string(quantization.group_size) + " " +
                std::to_string(quantization.bits) + "-bit values");
  return packed;
}

std::unique_ptr<KvCache> quantized_from(const StateItems& items, kernels::KvPacking packing) {
  const KvQuantization quantization{items.integer("4"), items.integer("3"), packing};
  const int bits = quantization.bits, group = quantization.group_size;
  const bool turbo = packing == kernels::KvPacking::turbo;
  if (turbo ? !kernels::turbo::supported(bits, group)
            : bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
    throw Error(items.describe("4") + ": " + std::to_string(bits) + " bits is not supported");
  if (group != 32 && group != 64 && group != 128)
    throw Error(items.describe("3") + ": group size " + std::to_string(group) +
                " is not supported");
  auto keys = packed_from(items, "0", quantization);
  auto values = packed_from(items, "1", quantization);
  if (keys.codes.shape(1) != values.codes.shape(1) ||
      keys.codes.shape(2) != values.codes.shape(2) || keys.scales.dtype() != values.scales.dtype())
    throw Error(items.describe("0") + ": keys and values differ in heads, tokens or dtype");
  const int offset = items.integer("2");
  check_offset(items, offset, keys.codes.shape(2));
  return std::make_unique<QuantizedKvCache>(quantization, keys, values, offset);
}

}  // namespace

const mx::array& CacheState::array(const std::string& name) const {
  for (const auto& [item_name, item] : items)
    if (item_name == name)
      if (const auto* value = std::get_if<mx::array>(&item)) return *value;
  throw Error(kind + " state has no array item " + name);
}

std::unique_ptr<KvCache> cache_from_state(const CacheState& state) {
  const StateItems items(state);
  if (state.kind == "KVCache") return standard_from(items);
  if (state.kind == "RotatingKVCache") return rotating_from(items);
  if (state.kind == "QuantizedKVCache") return quantized_from(items, kernels::KvPacking::affine);
  if (state.kind == kTurboCacheKind) return quantized_from(items, kernels::KvPacking::turbo);
  if (state.kind == "ArraysCache") return recurrent_state_from(items);
  throw Error("cache kind " + state.kind +
              " is not supported (KVCache, RotatingKVCache, QuantizedKVCache, " + kTurboCacheKind +
              " and ArraysCache are)");
}

}  // namespace mlx_cpp
