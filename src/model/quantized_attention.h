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

// Attention over a quantized cache's packed keys and values, by the kernel
// that reads them: affine ones on the stock path as mlx-lm
// (quantized_attention above), on the fast path on the CPU by the own
// kernel (kernels::packed_attention_fast: no quantized matmul over the
// whole cache each step, within the fast path's tolerance); TurboQuant's
// always by the own kernel, which is its only reader.
mlx::core::array attend_packed(const mlx::core::array& queries, const PackedKv& keys,
                               const PackedKv& values, float scale, const AttentionMask& mask,
                               const KvQuantization& quantization, bool fast_kernels);

}  // namespace mlx_cpp
