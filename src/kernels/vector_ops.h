#pragma once
// Row-level float operations the elementwise and attention kernels build
// on, in one table per SIMD level (scalar, AVX2, AVX-512). Rows are float32
// in memory; load/store convert from and to the tensors' dtypes. One
// block-level op, matmul_tile, serves attention's score and value products.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels {

using qmm::ScalarType;

struct VectorOps {
  const char* name;
  // dst[i] = float(src[offset + i]) for i < count.
  void (*load)(const void* src, ScalarType type, std::size_t offset, int count, float* dst);
  // dst[offset + i] = src[i] rounded to `type` (nearest even, as MLX).
  void (*store)(const float* src, int count, void* dst, ScalarType type, std::size_t offset);
  float (*dot)(const float* a, const float* b, int count);
  // out[j] = a . b_j for the rows b_j = b + j * ldb, j < rows, each of
  // `count` floats: the products of kLanes rows share one transposing
  // reduction instead of one reduction per row.
  void (*dot_rows)(const float* a, const float* b, int ldb, int count, int rows, float* out);
  // dot_rows with b's rows in half precision (`type` bfloat16 or float16),
  // widened in registers: each out[j] is the same whatever `rows` is.
  void (*dot_rows_half)(const float* a, const void* b, ScalarType type, int ldb, int count,
                        int rows, float* out);
  float (*sum_squares)(const float* a, int count);
  void (*axpy)(float alpha, const float* x, float* y, int count);  // y += alpha * x
  void (*scale)(float alpha, float* x, int count);                 // x *= alpha
  float (*max)(const float* a, int count);
  // a[i] = exp(a[i] - shift); returns the sum of the new a.
  float (*exp_shifted_sum)(float* a, float shift, int count);
  // out = silu(gate) * up = gate * sigmoid(gate) * up
  void (*silu_mul)(const float* gate, const float* up, float* out, int count);
  // out = gelu_approx(gate) * up, gelu_approx(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
  void (*gelu_approx_mul)(const float* gate, const float* up, float* out, int count);
  // c = a @ b, or c += a @ b when `accumulate`: a [rows, depth], b [depth,
  // cols], c [rows, cols], all row-major with the given leading dimensions
  // (in floats). Register-blocked for small operands that sit in cache.
  void (*matmul_tile)(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                      int cols, int depth, bool accumulate);
  // One group of activations as the int16 decode kernels read them:
  // out[i] = x[i] * 32767 / max |x| rounded to the nearest integer (ties to
  // even, as lrintf), within +-32767; returns max |x| / 32767 (0 for a
  // group of zeros). NaNs are left out of the maximum and become -32767.
  // Every level gives the same bits (the decode step runs once per token
  // on every matmul's input, so it is vectorized).
  float (*quantize_int16)(const float* x, int count, std::int16_t* out);
};

// quantize_int16 of one value already multiplied by 32767 / max |x|.
inline std::int16_t rounded_int16(float scaled) {
  return static_cast<std::int16_t>(std::clamp(std::lrintf(scaled), -32767L, 32767L));
}

// The table for the active SIMD level (see cpu_features.h).
const VectorOps& vector_ops();

const VectorOps& scalar_vector_ops();
const VectorOps& avx2_vector_ops();
const VectorOps& avx512_vector_ops();

}  // namespace mlx_cpp::kernels
