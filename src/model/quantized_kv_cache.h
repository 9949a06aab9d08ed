#pragma once
// A cache that holds keys and values quantized per group of the head
// dimension. Affine, it is mlx-lm's QuantizedKVCache: the same step-grown
// storage, the same mx::quantize of each update, so attention over it
// (model/quantized_attention.h) is bit-exact with mlx-lm's
// quantized_scaled_dot_product_attention. Under TurboQuant the same storage
// holds the codec's codes and per-group norms (kernels::turbo_quantize),
// which only the own attention kernel reads (mlx-lm has no such cache). A
// float cache becomes one through KvCache::quantized() once it passes a
// scheme's start (engine/kv_cache_scheme.h).
#include "model/kv_cache.h"

namespace mlx_cpp {

// The quantized form of one tensor [B, kv_heads, S, head_dim]: codes
// packed in uint32 words, and a scale and bias per group (affine) or a
// float32 norm per group in `scales` (TurboQuant).
using PackedKv = kernels::PackedKvRows;

// The saved state's kind of a TurboQuant cache (mlx-lm's QuantizedKVCache's
// items without biases).
constexpr const char* kTurboCacheKind = "TurboQuantKVCache";

class QuantizedKvCache : public KvCache {
 public:
  explicit QuantizedKvCache(KvQuantization quantization);
  // A float cache's storage quantized whole (mlx-lm's to_quantized).
  QuantizedKvCache(KvQuantization quantization, const mlx::core::array& keys,
                   const mlx::core::array& values, int offset);
  // Packed storage as saved, holding `offset` tokens.
  QuantizedKvCache(KvQuantization quantization, PackedKv keys, PackedKv values, int offset)
      : quantization_(quantization), keys_(keys), values_(values), offset_(offset) {}

  // Quantizes the new keys/values into the storage; returns everything to
  // attend over, packed.
  std::pair<PackedKv, PackedKv> update_and_fetch_packed(const mlx::core::array& keys,
                                                        const mlx::core::array& values);
  // The same, dequantized (for callers that read plain keys and values).
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) override;
  QuantizedKvCache* as_quantized() override { return this; }
  std::optional<KvQuantization> quantization() const override { return quantization_; }

  AttentionMask make_mask(int length, std::optional<int> window_size) const override;
  int offset() const override { return offset_; }
  bool is_trimmable() const override { return true; }
  bool trimmable_after(int) const override { return true; }
  int trim(int n) override;
  size_t byte_size() const override;
  size_t bytes_for_tokens(int tokens, int prefill_chunk) const override;
  std::string signature() const override;
  std::vector<mlx::core::array> state() const override;
  std::unique_ptr<KvCache> clone() const override;
  CacheState saved_state() const override;

  static constexpr int kStep = 256;

 private:
  void reserve(int length, const mlx::core::array& keys, const mlx::core::array& values);
  std::pair<PackedKv, PackedKv> fetch() const;

  KvQuantization quantization_;
  std::optional<PackedKv> keys_, values_;
  int offset_ = 0;
};

}  // namespace mlx_cpp
