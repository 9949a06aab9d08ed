// AVX-512 quantized matmul: 16 floats per vector, 8 x 32 micro-kernel
// (16 accumulators of the 32 zmm registers).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"

// GCC 12's AVX-512 intrinsics initialise vectors from themselves
// (_mm512_undefined_*), which -Wmaybe-uninitialized reports as a false
// positive once inlined; silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx512 {
namespace {

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/qmm_simd_body.inc"
// clang-format on

}  // namespace
}  // namespace avx512

const IsaKernels& avx512_kernels() {
  static const IsaKernels kernels = [] {
    IsaKernels table{"avx512", avx512::L, avx512::kPanelColumns, avx512::gemv, avx512::gemm};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni")) {
      table.gemv_int8 = avx512_vnni_gemv_int8;
      table.int8_interleave = 64;
      table.int8_k_align = 128;
      table.gemv_int16_q4 = avx512_vnni_gemv_int16_q4;
      table.gemv_int16_q8 = avx512_vnni_gemv_int16_q8;
      table.gemv_int16_q4_rows = avx512_vnni_gemv_int16_q4_rows;
      if (__builtin_cpu_supports("avx512vbmi")) table.gemv_int16_q6 = avx512_vbmi_gemv_int16_q6;
    }
    if (__builtin_cpu_supports("avx512bf16")) table.gemv_bf16_q4 = avx512_bf16_gemv_q4;
    if (__builtin_cpu_supports("avx512fp16")) {
      table.gemm_fp16 = avx512_fp16_gemm;
      table.prepare_x_fp16 = prepare_x_float16;
    }
    return table;
  }();
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#else  // not x86: the portable table stands in

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {
const IsaKernels& avx512_kernels() {
  return scalar_kernels();
}
}  // namespace mlx_cpp::kernels::qmm

#endif
