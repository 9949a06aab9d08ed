#pragma once
// The kernels of kernels.h as plain functions that compute now, for a
// primitive that runs several of them inside one graph node (a model's
// fused decode step: one node instead of ~25 per layer, each of which costs
// scheduling, a buffer and a thread hand-off).
//
// Inputs are evaluated arrays; outputs are arrays the caller allocated
// (allocated_array) in the dtype the op of kernels.h would give. Each
// function runs the same code as its op, so results are the op's bit for
// bit. No validation here: the caller builds the shapes the ops validate.
// Call them from a task on a CPU stream (they use the shared thread pool).
#include <mlx/array.h>

#include <optional>
#include <vector>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels::eager {

// An uninitialized, evaluated array that owns a fresh buffer.
mlx::core::array allocated_array(const mlx::core::Shape& shape, mlx::core::Dtype dtype);

// As quantized_matmuls_fast: out[i] = x @ dequantize(weights[i])^T.
void quantized_matmuls(const mlx::core::array& x, const std::vector<QuantizedWeights>& weights,
                       int group_size, int bits, ActivationPrecision precision,
                       PrefillArithmetic prefill, std::vector<mlx::core::array>& out);

// As rms_norm_fast over the last axis; the weight (any float dtype) is
// rounded to out's dtype first, as the op's astype does.
void rms_norm(const mlx::core::array& x, const mlx::core::array& weight, float eps,
              mlx::core::array& out);

// As add_rms_norm_fast: sum = x + residual, out = rms_norm(sum).
void add_rms_norm(const mlx::core::array& x, const mlx::core::array& residual,
                  const mlx::core::array& weight, float eps, mlx::core::array& sum,
                  mlx::core::array& out);

// As rope_fast with a scalar offset.
void rope(const mlx::core::array& x, int dims, bool traditional, std::optional<float> base,
          float scale, int offset, const std::optional<mlx::core::array>& freqs,
          mlx::core::array& out);

// As attention_fast without mask over the first `key_count` positions of
// k and v ([B, Hkv, capacity, D], read in place): one query row sees them
// all, as in a decode step.
void attention(const mlx::core::array& q, const mlx::core::array& k, const mlx::core::array& v,
               float scale, int key_count, mlx::core::array& out);

// As gated_activation_fast.
void gated_activation(const mlx::core::array& gate, const mlx::core::array& up,
                      GatedActivation activation, mlx::core::array& out);

// As low_rank_update_fast; y's rows may take any shape (y.size() / rows
// of x elements each), and out may be y itself (updated in place).
void low_rank_update(const mlx::core::array& x, const mlx::core::array& y,
                     const std::vector<mlx::core::array>& factors,
                     const std::vector<LowRankTerm>& terms, mlx::core::array& out);

// out = a + b (one shape, or b one row of a, added to every row; any float
// dtypes), in float32 and rounded once to out's dtype, as mlx::core::add.
void add(const mlx::core::array& a, const mlx::core::array& b, mlx::core::array& out);

// out = x with the first `width` elements of every last-axis row
// multiplied by factor, as mlx::core::multiply(x, array(factor, x.dtype()))
// on that part (the factor rounded to x's dtype, each product rounded once).
void scale_leading(const mlx::core::array& x, int width, float factor, mlx::core::array& out);

// dst (row-contiguous, src's shape and dtype) = src (any strides).
void copy(const mlx::core::array& src, mlx::core::array& dst);

// Row `row` of a row-contiguous batch [B, ...] into `out` (its shape with
// B = 1, same dtype), and back: plain copies of contiguous bytes, for a
// step that runs some kernels on every row at once and others row by row.
void copy_batch_row(const mlx::core::array& batch, int row, mlx::core::array& out);
void store_batch_row(const mlx::core::array& row_array, mlx::core::array& batch, int row);

// dst[..., position, :] = src[..., 0, :] for src [B, H, 1, D] and dst
// [B, H, capacity, D] (row-contiguous), converting to dst's dtype as
// mlx::core::astype (nearest even).
void write_sequence_row(const mlx::core::array& src, mlx::core::array& dst, int position);

}  // namespace mlx_cpp::kernels::eager
