#include "model/quantized_kv_cache.h"

#include <mlx/ops.h>

#include <algorithm>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// f applied to each array of a packed tensor (or of two).
template <class F>
PackedKv each(const PackedKv& v, F&& f) {
  return {f(v.codes), f(v.scales), v.biases ? std::optional(f(*v.biases)) : std::nullopt};
}
template <class F>
PackedKv each(const PackedKv& a, const PackedKv& b, F&& f) {
  return {f(a.codes, b.codes), f(a.scales, b.scales),
          a.biases ? std::optional(f(*a.biases, *b.biases)) : std::nullopt};
}

PackedKv sequence_slice(const PackedKv& v, int start, int stop) {
  return each(v, [&](const mx::array& a) { return mlx_cpp::sequence_slice(a, start, stop); });
}

bool turbo(const KvQuantization& quantization) {
  return quantization.packing == kernels::KvPacking::turbo;
}

PackedKv quantize(const mx::array& v, const KvQuantization& quantization) {
  if (turbo(quantization)) {
    auto [codes, norms] = kernels::turbo_quantize(v, quantization.bits, quantization.group_size);
    return {codes, norms, std::nullopt};
  }
  auto parts = mx::quantize(v, quantization.group_size, quantization.bits);
  return {parts[0], parts[1], parts[2]};
}

// Room for `steps` tokens of a [B, H, *, dim] tensor, zeroed as mlx-lm's
// init_quant makes it: uint32 codes, factors in the keys' dtype (a
// TurboQuant norm in float32).
PackedKv zero_storage(const mx::array& like, int steps, const KvQuantization& quantization) {
  const int dim = like.shape(3);
  const mx::Shape base{like.shape(0), like.shape(1), steps};
  auto shape = [&](int last) {
    auto s = base;
    s.push_back(last);
    return s;
  };
  const auto codes = mx::zeros(shape(dim * quantization.bits / 32), mx::uint32);
  const auto factors = shape(dim / quantization.group_size);
  if (turbo(quantization)) return {codes, mx::zeros(factors, mx::float32), std::nullopt};
  return {codes, mx::zeros(factors, like.dtype()), mx::zeros(factors, like.dtype())};
}

PackedKv concatenate(const PackedKv& a, const PackedKv& b) {
  return each(a, b, [](const mx::array& x, const mx::array& y) {
    return mx::concatenate({x, y}, 2);
  });
}

mx::array assign_sequence(const mx::array& target, const mx::array& update, int start) {
  auto stop = target.shape();
  stop[2] = start + update.shape(2);
  return mx::slice_update(target, update, {0, 0, start, 0}, stop);
}

PackedKv assign_sequence(const PackedKv& target, const PackedKv& update, int start) {
  return each(target, update, [start](const mx::array& x, const mx::array& y) {
    return assign_sequence(x, y, start);
  });
}

mx::array dequantize_kv(const PackedKv& v, const KvQuantization& quantization) {
  if (turbo(quantization))
    return kernels::turbo_dequantize(v.codes, v.scales, quantization.bits, quantization.group_size);
  return mx::dequantize(v.codes, v.scales, *v.biases, quantization.group_size, quantization.bits);
}

size_t packed_bytes(const PackedKv& v) {
  return v.codes.nbytes() + v.scales.nbytes() + (v.biases ? v.biases->nbytes() : 0);
}

}  // namespace

QuantizedKvCache::QuantizedKvCache(KvQuantization quantization) : quantization_(quantization) {}

QuantizedKvCache::QuantizedKvCache(KvQuantization quantization, const mx::array& keys,
                                   const mx::array& values, int offset)
    : quantization_(quantization),
      keys_(quantize(keys, quantization)),
      values_(quantize(values, quantization)),
      offset_(offset) {}

std::string QuantizedKvCache::signature() const {
  return std::string(turbo(quantization_) ? "turbo" : "quantized") +
         "(bits=" + std::to_string(quantization_.bits) +
         ",group=" + std::to_string(quantization_.group_size) + ")";
}

void QuantizedKvCache::reserve(int length, const mx::array& keys, const mx::array& values) {
  const int previous = offset_;
  if (keys_ && previous + length <= keys_->codes.shape(2)) return;
  const int steps = (kStep + length - 1) / kStep * kStep;
  auto new_keys = zero_storage(keys, steps, quantization_);
  auto new_values = zero_storage(values, steps, quantization_);
  if (!keys_) {
    keys_ = new_keys;
    values_ = new_values;
    return;
  }
  if (previous % kStep != 0) {
    keys_ = sequence_slice(*keys_, 0, previous);
    values_ = sequence_slice(*values_, 0, previous);
  }
  keys_ = concatenate(*keys_, new_keys);
  values_ = concatenate(*values_, new_values);
}

std::pair<PackedKv, PackedKv> QuantizedKvCache::update_and_fetch_packed(const mx::array& keys,
                                                                        const mx::array& values) {
  const int previous = offset_;
  reserve(keys.shape(2), keys, values);
  offset_ += keys.shape(2);
  keys_ = assign_sequence(*keys_, quantize(keys, quantization_), previous);
  values_ = assign_sequence(*values_, quantize(values, quantization_), previous);
  return fetch();
}

std::pair<mx::array, mx::array> QuantizedKvCache::update_and_fetch(const mx::array& keys,
                                                                   const mx::array& values) {
  auto [all_keys, all_values] = update_and_fetch_packed(keys, values);
  return {dequantize_kv(all_keys, quantization_), dequantize_kv(all_values, quantization_)};
}

std::pair<PackedKv, PackedKv> QuantizedKvCache::fetch() const {
  if (offset_ < keys_->codes.shape(2))
    return {sequence_slice(*keys_, 0, offset_), sequence_slice(*values_, 0, offset_)};
  return {*keys_, *values_};
}

AttentionMask QuantizedKvCache::make_mask(int length, std::optional<int> window_size) const {
  if (window_size) return {AttentionMask::Kind::array, causal_mask(length, offset_, window_size)};
  if (length == 1) return {};
  return {AttentionMask::Kind::causal, std::nullopt};
}

int QuantizedKvCache::trim(int n) {
  n = std::min(offset_, n);
  offset_ -= n;
  return n;
}

size_t QuantizedKvCache::byte_size() const {
  return keys_ ? packed_bytes(*keys_) + packed_bytes(*values_) : 0;
}

size_t QuantizedKvCache::bytes_for_tokens(int tokens, int /*prefill_chunk*/) const {
  if (!keys_) return 0;
  const size_t per_token = byte_size() / keys_->codes.shape(2);
  const size_t capacity = (static_cast<size_t>(tokens) + kStep - 1) / kStep * kStep;
  return per_token * capacity;
}

std::vector<mx::array> QuantizedKvCache::state() const {
  if (!keys_) return {};
  std::vector<mx::array> arrays;
  for (const auto* v : {&*keys_, &*values_}) {
    arrays.push_back(v->codes);
    arrays.push_back(v->scales);
    if (v->biases) arrays.push_back(*v->biases);
  }
  return arrays;
}

CacheState QuantizedKvCache::saved_state() const {
  if (!keys_) throw Error("a KV cache that holds no tokens has no state to save");
  // mlx-lm's QuantizedKVCache; a TurboQuant cache is saved alike under a
  // kind of its own (no biases), which only mlx-cpp reads.
  CacheState state{turbo(quantization_) ? kTurboCacheKind : "QuantizedKVCache", {}};
  auto add = [&](const std::string& prefix, const PackedKv& v) {
    state.items.emplace_back(prefix + ".0", v.codes);
    state.items.emplace_back(prefix + ".1", v.scales);
    if (v.biases) state.items.emplace_back(prefix + ".2", *v.biases);
  };
  add("0", *keys_);
  add("1", *values_);
  state.items.emplace_back("2", offset_);
  state.items.emplace_back("3", quantization_.group_size);
  state.items.emplace_back("4", quantization_.bits);
  return state;
}

std::unique_ptr<KvCache> QuantizedKvCache::clone() const {
  // MLX's ops never write into shared buffers, and this cache only ever
  // replaces its arrays, so a copy of the handles is a copy of the cache.
  return std::make_unique<QuantizedKvCache>(*this);
}

}  // namespace mlx_cpp
