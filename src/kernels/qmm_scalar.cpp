// Portable quantized matmul: dequantizes one weight row at a time to float
// and takes plain dot products. Natural k order; no SIMD assumptions.
#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {

namespace {

// Weight row n's scales and biases as float32; returns its packed values.
const std::uint8_t* load_row(const Problem& p, int n, float* scale, float* bias) {
  const int groups = p.K / p.group_size;
  load_as_float(p.scales, p.scale_type, static_cast<std::size_t>(n) * groups, groups, scale);
  load_as_float(p.biases, p.scale_type, static_cast<std::size_t>(n) * groups, groups, bias);
  return p.w + static_cast<std::size_t>(n) * p.K * p.bits / 8;
}

void dequantize_row(const Problem& p, int n, float* scale, float* bias, float* w_row) {
  const std::uint8_t* packed = load_row(p, n, scale, bias);
  for (int k = 0; k < p.K; ++k) {
    int q = quantized_value(packed, k, p.bits);
    int g = k / p.group_size;
    w_row[k] = scale[g] * static_cast<float>(q) + bias[g];
  }
}

void scalar_matmul(const Problem& p, int n_begin, int n_end) {
  const int groups = p.K / p.group_size;
  float* scale = thread_scratch(0, 2 * static_cast<std::size_t>(groups));
  float* bias = scale + groups;
  float* w_row = thread_scratch(1, p.K);
  for (int n = n_begin; n < n_end; ++n) {
    dequantize_row(p, n, scale, bias, w_row);
    for (int m = 0; m < p.M; ++m) {
      const float* x = p.x + static_cast<std::size_t>(m) * p.K;
      float sum = 0.0f;
      for (int k = 0; k < p.K; ++k) sum += x[k] * w_row[k];
      store_from_float(&sum, 1, p.out, p.out_type, static_cast<std::size_t>(m) * p.N + n);
    }
  }
}

// The int8-activation reference: per block of 32 k, an exact integer dot of
// the raw weights q with xq, scaled by the weight group's scale and the
// block's x scale; the bias term comes from the float sums of x.
void scalar_gemv_int8(const Problem& p, int n_begin, int n_end) {
  constexpr int kBlock = 32;
  const int groups = p.K / p.group_size;
  const int scale_stride = p.k_padded / kBlock + 4;
  float* scale = thread_scratch(0, 2 * static_cast<std::size_t>(groups));
  float* bias = scale + groups;
  for (int n = n_begin; n < n_end; ++n) {
    const std::uint8_t* packed = load_row(p, n, scale, bias);
    for (int m = 0; m < p.M; ++m) {
      const std::int8_t* xq = p.xq + static_cast<std::size_t>(m) * p.k_padded;
      const float* xq_scale = p.xq_scales + static_cast<std::size_t>(m) * scale_stride;
      const float* sums = p.x_group_sums + static_cast<std::size_t>(m) * groups;
      float sum = 0.0f;
      for (int b = 0; b * kBlock < p.K; ++b) {
        int dot = 0;
        for (int k = b * kBlock; k < (b + 1) * kBlock; ++k) {
          dot += quantized_value(packed, k, p.bits) * xq[k];
        }
        sum += scale[b * kBlock / p.group_size] * xq_scale[b] * static_cast<float>(dot);
      }
      for (int g = 0; g < groups; ++g) sum += bias[g] * sums[g];
      store_from_float(&sum, 1, p.out, p.out_type, static_cast<std::size_t>(m) * p.N + n);
    }
  }
}

// The int16-activation reference for 4-, 6- and 8-bit weights: per group, the
// exact integer dot of the raw values q with x_i16, scaled by the weight group's
// scale times the x group's scale; the bias term from the float sums of x.
void scalar_gemv_int16(const Problem& p, int n_begin, int n_end) {
  const int groups = p.K / p.group_size;
  const int scale_stride = int16_scale_stride(p.k_padded, p.group_size);
  float* scale = thread_scratch(0, 2 * static_cast<std::size_t>(groups));
  float* bias = scale + groups;
  for (int n = n_begin; n < n_end; ++n) {
    const std::uint8_t* packed = load_row(p, n, scale, bias);
    for (int m = 0; m < p.M; ++m) {
      const std::int16_t* xq = p.x_i16 + static_cast<std::size_t>(m) * p.k_padded;
      const float* x_scale = p.x_i16_scales + static_cast<std::size_t>(m) * scale_stride;
      const float* sums = p.x_group_sums + static_cast<std::size_t>(m) * groups;
      float sum = 0.0f;
      for (int g = 0; g < groups; ++g) {
        std::int64_t dot = 0;
        for (int k = g * p.group_size; k < (g + 1) * p.group_size; ++k) {
          dot += quantized_value(packed, k, p.bits) * xq[even_odd_position(k)];
        }
        sum += scale[g] * x_scale[g] * static_cast<float>(dot) + bias[g] * sums[g];
      }
      store_from_float(&sum, 1, p.out, p.out_type, static_cast<std::size_t>(m) * p.N + n);
    }
  }
}

}  // namespace

const IsaKernels& scalar_kernels() {
  static const IsaKernels kernels = [] {
    IsaKernels table{"scalar", 1, 1, scalar_matmul, scalar_matmul, scalar_gemv_int8};
    table.gemv_int16_q4 = scalar_gemv_int16;
    table.gemv_int16_q6 = scalar_gemv_int16;
    table.gemv_int16_q8 = scalar_gemv_int16;
    return table;
  }();
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm
