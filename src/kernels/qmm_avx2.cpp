// AVX2 + FMA quantized matmul: 8 floats per vector, 6 x 16 micro-kernel
// (12 accumulators + 2 panel vectors + 1 broadcast of the 16 ymm registers).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx2 {
namespace {

struct Vec {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kGemmRows = 6;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float f) { return _mm256_set1_ps(f); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) {
    __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    half = _mm_add_ps(half, _mm_movehl_ps(half, half));
    half = _mm_add_ss(half, _mm_movehdup_ps(half));
    return _mm_cvtss_f32(half);
  }
  // 8 bytes -> 16 nibbles: lanes of the low nibbles (even k), high (odd k).
  static void unpack4(const std::uint8_t* bytes, V& even, V& odd) {
    __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
    even = _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(0xF)));
    odd = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
  }
  static V unpack8(const std::uint8_t* bytes) {
    __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
  }
};

#include "kernels/qmm_simd_body.inc"

}  // namespace
}  // namespace avx2

const IsaKernels& avx2_kernels() {
  static const IsaKernels kernels{"avx2", avx2::L, avx2::kPanelColumns, avx2::gemv, avx2::gemm};
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options
