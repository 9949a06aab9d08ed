// Portable VectorOps: plain loops (the compiler may vectorize the
// element-wise ones for the baseline ISA), and the table for the active
// SIMD level.
#include <mlx/types/half_types.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace {

float dot(const float* a, const float* b, int count) {
  float sum = 0.0f;
  for (int i = 0; i < count; ++i) sum += a[i] * b[i];
  return sum;
}

// out[j] = a . (row j of b), rows ldb apart, b's values widened to float.
template <typename T>
void dot_rows_of(const float* a, const T* b, int ldb, int count, int rows, float* out) {
  for (int j = 0; j < rows; ++j) {
    const T* row = b + static_cast<std::ptrdiff_t>(j) * ldb;
    float sum = 0.0f;
    for (int i = 0; i < count; ++i) sum += a[i] * static_cast<float>(row[i]);
    out[j] = sum;
  }
}

void dot_rows(const float* a, const float* b, int ldb, int count, int rows, float* out) {
  dot_rows_of(a, b, ldb, count, rows, out);
}

void dot_rows_half(const float* a, const void* b, ScalarType type, int ldb, int count, int rows,
                   float* out) {
  if (type == ScalarType::bfloat16)
    dot_rows_of(a, static_cast<const mlx::core::bfloat16_t*>(b), ldb, count, rows, out);
  else
    dot_rows_of(a, static_cast<const mlx::core::float16_t*>(b), ldb, count, rows, out);
}

float sum_squares(const float* a, int count) {
  return dot(a, a, count);
}

void axpy(float alpha, const float* x, float* y, int count) {
  for (int i = 0; i < count; ++i) y[i] += alpha * x[i];
}

void scale(float alpha, float* x, int count) {
  for (int i = 0; i < count; ++i) x[i] *= alpha;
}

float max(const float* a, int count) {
  float result = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < count; ++i) result = a[i] > result ? a[i] : result;
  return result;
}

float exp_shifted_sum(float* a, float shift, int count) {
  float sum = 0.0f;
  for (int i = 0; i < count; ++i) sum += (a[i] = std::exp(a[i] - shift));
  return sum;
}

void silu_mul(const float* gate, const float* up, float* out, int count) {
  for (int i = 0; i < count; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void gelu_approx_mul(const float* gate, const float* up, float* out, int count) {
  constexpr float kTwiceSqrt2OverPi = 2.0f * 0.7978845608028654f;
  for (int i = 0; i < count; ++i) {
    float g = gate[i];
    float two_y = kTwiceSqrt2OverPi * (g + 0.044715f * g * g * g);
    out[i] = g / (1.0f + std::exp(-two_y)) * up[i];
  }
}

void matmul_tile(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                 int cols, int depth, bool accumulate) {
  for (int r = 0; r < rows; ++r) {
    float* c_row = c + r * ldc;
    if (!accumulate) std::fill(c_row, c_row + cols, 0.0f);
    for (int k = 0; k < depth; ++k) axpy(a[r * lda + k], b + k * ldb, c_row, cols);
  }
}

float quantize_int16(const float* x, int count, std::int16_t* out) {
  float amax = 0.0f;
  for (int i = 0; i < count; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float inverse = amax > 0.0f ? 32767.0f / amax : 0.0f;
  for (int i = 0; i < count; ++i) out[i] = rounded_int16(x[i] * inverse);
  return amax / 32767.0f;
}

}  // namespace

const VectorOps& scalar_vector_ops() {
  static const VectorOps ops{"scalar",
                             qmm::load_as_float,
                             qmm::store_from_float,
                             dot,
                             dot_rows,
                             dot_rows_half,
                             sum_squares,
                             axpy,
                             scale,
                             max,
                             exp_shifted_sum,
                             silu_mul,
                             gelu_approx_mul,
                             matmul_tile,
                             quantize_int16};
  return ops;
}

const VectorOps& vector_ops() {
  switch (active_isa()) {
    case Isa::avx512:
      return avx512_vector_ops();
    case Isa::avx2:
      return avx2_vector_ops();
    case Isa::scalar:
      break;
  }
  return scalar_vector_ops();
}

}  // namespace mlx_cpp::kernels
