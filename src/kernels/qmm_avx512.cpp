// AVX-512 quantized matmul: 16 floats per vector, 8 x 32 micro-kernel
// (16 accumulators of the 32 zmm registers).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"

// GCC 12's AVX-512 intrinsics initialise vectors from themselves
// (_mm512_undefined_*), which -Wmaybe-uninitialized reports as a false
// positive once inlined; silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx512 {
namespace {

struct Vec {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kGemmRows = 8;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float f) { return _mm512_set1_ps(f); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
  // 16 bytes -> 32 nibbles: lanes of the low nibbles (even k), high (odd k).
  static void unpack4(const std::uint8_t* bytes, V& even, V& odd) {
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
    even = _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF)));
    odd = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
  }
  static V unpack8(const std::uint8_t* bytes) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
  }
};

#include "kernels/qmm_simd_body.inc"

}  // namespace
}  // namespace avx512

const IsaKernels& avx512_kernels() {
  static const IsaKernels kernels{"avx512", avx512::L, avx512::kPanelColumns, avx512::gemv,
                                  avx512::gemm};
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options
