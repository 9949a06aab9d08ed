// AVX2 + FMA quantized matmul: 8 floats per vector, 6 x 16 micro-kernel
// (12 accumulators + 2 panel vectors + 1 broadcast of the 16 ymm registers).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx2 {
namespace {

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx2.inc"
#include "kernels/qmm_simd_body.inc"
// clang-format on

}  // namespace
}  // namespace avx2

const IsaKernels& avx2_kernels() {
  static const IsaKernels kernels = [] {
    IsaKernels table{"avx2", avx2::L, avx2::kPanelColumns, avx2::gemv, avx2::gemm};
    table.gemv_int16_q4 = avx2_gemv_int16_q4;
    table.gemv_int16_q6 = avx2_gemv_int16_q6;
    table.gemv_int16_q8 = avx2_gemv_int16_q8;
    return table;
  }();
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#else  // not x86: the portable table stands in

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {
const IsaKernels& avx2_kernels() {
  return scalar_kernels();
}
}  // namespace mlx_cpp::kernels::qmm

#endif
