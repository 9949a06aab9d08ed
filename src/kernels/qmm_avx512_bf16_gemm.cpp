// Prefill quantized matmul in bfloat16 on AVX512-BF16 (AMD Zen 4 and 5 have
// it without AVX512-FP16): vdpbf16ps multiplies 32 bfloat16 pairs and adds
// each pair's two products into one of 16 float32 lanes, twice the float32
// FMA's multiply-adds per instruction. The panel of pairs (k, k + 1) is the
// float16 kernel's (qmm_avx512_half_gemm.inc) with bfloat16 halves, and each
// lane sums its column's pair, so the float32 tile needs no even/odd
// halves and no flushes: every sum is float32. bfloat16 has float32's
// exponent range, so x needs no scaling. Errors: bfloat16 rounding of x and
// of the dequantized w (2^-9 relative each); the sums are float32.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/qmm_avx512_factors.inc"
// clang-format on

struct Half {
  // Round to nearest even, as MLX's bfloat16 conversion.
  static __m256i from_float(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }

  // Per row of x, the 32 columns' float32 sums.
  static constexpr int kTileFloats = 32;

  // c[Rows][32] += x[Rows][depth] @ panel; x rows are `x_stride` halves
  // apart.
  template <int Rows>
  static void micro_kernel(const std::uint16_t* x, int x_stride, const std::uint32_t* panel,
                           int depth, float* c) {
    __m512 acc[Rows][2];
    for (int r = 0; r < Rows; ++r) {
      acc[r][0] = _mm512_loadu_ps(c + r * kTileFloats);
      acc[r][1] = _mm512_loadu_ps(c + r * kTileFloats + 16);
    }
    const std::uint32_t* pairs = panel;
    for (int k = 0; k < depth; k += 2, pairs += 32) {
      const __m512bh b0 = (__m512bh)_mm512_loadu_si512(pairs);
      const __m512bh b1 = (__m512bh)_mm512_loadu_si512(pairs + 16);
      for (int r = 0; r < Rows; ++r) {
        std::uint32_t pair;
        std::memcpy(&pair, x + r * x_stride + k, sizeof(pair));
        const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
      }
    }
    for (int r = 0; r < Rows; ++r) {
      _mm512_storeu_ps(c + r * kTileFloats, acc[r][0]);
      _mm512_storeu_ps(c + r * kTileFloats + 16, acc[r][1]);
    }
  }

  static void finish_row(const float* row, float unscale, float* row_sums) {
    for (int i = 0; i < 32; i += 16)
      _mm512_storeu_ps(row_sums + i,
                       _mm512_mul_ps(_mm512_loadu_ps(row + i), _mm512_set1_ps(unscale)));
  }
};

// clang-format off
#include "kernels/qmm_avx512_half_gemm.inc"
// clang-format on

}  // namespace

void prepare_x_bfloat16(const float* x, int M, int K, std::uint16_t* x_bf16, float* unscale) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + static_cast<std::size_t>(m) * K;
    std::uint16_t* out = x_bf16 + static_cast<std::size_t>(m) * K;
    int k = 0;
    for (; k + 16 <= K; k += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(row + k)));
    }
    if (k < K) {
      const __mmask16 tail = static_cast<__mmask16>((1u << (K - k)) - 1);
      _mm256_mask_storeu_epi16(out + k, tail,
                               (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(tail, row + k)));
    }
    unscale[m] = 1.0f;
  }
}

void avx512_bf16_gemm(const Problem& p, int n_begin, int n_end) {
  gemm_any_bits(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#endif
