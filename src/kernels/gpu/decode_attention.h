#pragma once
// The GPU's own decode attention: one query token per row, each row over its
// own key/value cache of its own length, all rows in one launch.
//
// Batched decode on the GPU otherwise attends row by row (a row never meets
// another row's keys), some ten graph nodes per row and layer; this is one.
// Each (row, query head) is one block: its warps stream the row's keys and
// values in a fixed order with an online softmax in float32 and combine in a
// fixed order, so a row's output is the same bits whatever the other rows
// are (batch invariance), and within float32 rounding of softmax(q kᵀ ·
// scale) v (tests/kernels/gpu_decode_attention_test.cpp). Grouped queries:
// query head h reads key/value head h / (heads / kv_heads).
//
// Through MLX's custom-kernel primitive (see quantized_matvec.h); one kernel
// is compiled per number of rows (the rows' caches are separate inputs).
#include <mlx/array.h>
#include <mlx/stream.h>

#include <vector>

namespace mlx_cpp::kernels::gpu {

// Whether the kernel takes this call: a GPU stream, head size 64, 80, 96,
// 128 or 256, float queries, every cache [1, kv_heads, capacity, head_dim]
// of the queries' dtype with capacity >= its length >= 1, kv_heads dividing
// heads, at most 64 rows.
bool decode_attention_covers(const mlx::core::array& queries,
                             const std::vector<mlx::core::array>& keys,
                             const std::vector<mlx::core::array>& values,
                             const std::vector<int>& lengths, const mlx::core::Stream& stream);

// queries [rows, heads, 1, head_dim]; keys[b], values[b]: row b's cache
// buffers [1, kv_heads, capacity_b, head_dim], of which the first
// lengths[b] positions are attended (no mask: the one query is the newest
// position). Returns [rows, heads, 1, head_dim] in the queries' dtype.
mlx::core::array decode_attention(const mlx::core::array& queries,
                                  const std::vector<mlx::core::array>& keys,
                                  const std::vector<mlx::core::array>& values,
                                  const std::vector<int>& lengths, float scale,
                                  const mlx::core::Stream& stream);

}  // namespace mlx_cpp::kernels::gpu
