// Portable quantized matmul: dequantizes one weight row at a time to float
// and takes plain dot products. Natural k order; no SIMD assumptions.
#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {

namespace {

void dequantize_row(const Problem& p, int n, float* scale, float* bias, float* w_row) {
  const int groups = p.K / p.group_size;
  load_as_float(p.scales, p.scale_type, static_cast<std::size_t>(n) * groups, groups, scale);
  load_as_float(p.biases, p.scale_type, static_cast<std::size_t>(n) * groups, groups, bias);
  const std::uint8_t* packed = p.w + static_cast<std::size_t>(n) * p.K * p.bits / 8;
  for (int k = 0; k < p.K; ++k) {
    int q = p.bits == 8 ? packed[k] : (packed[k / 2] >> ((k & 1) * 4)) & 0xF;
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

}  // namespace

const IsaKernels& scalar_kernels() {
  static const IsaKernels kernels{"scalar", 1, 1, scalar_matmul, scalar_matmul};
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm
