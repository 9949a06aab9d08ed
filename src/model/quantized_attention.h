#pragma once
// Attention over quantized keys and values, computed as mlx-lm's
// quantized_scaled_dot_product_attention does (queries scaled, scores by a
// quantized matmul against the packed keys, mask, precise softmax, a
// quantized matmul against the packed values), so the stock path is
// bit-exact with mlx-lm's generate_step(kv_bits=...).
#include <mlx/array.h>

#include "model/kv_cache.h"
#include "model/quantized_kv_cache.h"

namespace mlx_cpp {

// queries [B, H, L, D]; keys/values packed [B, kv_heads, S, ...] →
// [B, H, L, D].
mlx::core::array quantized_attention(mlx::core::array queries, const PackedKv& keys,
                                     const PackedKv& values, float scale, const AttentionMask& mask,
                                     const KvQuantization& quantization);

}  // namespace mlx_cpp
