// Prefill quantized matmul in bfloat16 on AVX512-BF16 (AMD Zen 4 and 5 have
// it without AVX512-FP16): vdpbf16ps multiplies 32 bfloat16 pairs and adds
// each pair's two products into one of 16 float32 lanes, twice the float32
// FMA's multiply-adds per instruction. The panel of pairs (k, k + 1) is the
// float16 kernel's (qmm_avx512_half_gemm.inc) with bfloat16 halves, and each
// lane sums its column's pair, so the float32 tile needs no even/odd
// halves and no flushes: every sum is float32. bfloat16 has float32's
// exponent range, so x needs no scaling.
//
// bfloat16 keeps 8 significant bits: the dequantized weights rounded to it
// (2^-9 relative) took the fast path past its contract (5.15% of the
// largest logit on a q4 olmo2 with a LoRA adapter, bound 5%). So the
// panels hold the weights' codes, which bfloat16 holds exactly (integers
// up to 256), each group's dot products are scaled by the group's scale
// in float32 and its bias term is bias x (the float32 sum of x over the
// group). What remains is x's rounding to bfloat16 (2^-9 relative). x in
// two parts (its rounding and the remainder's, 2^-17 together) was tried:
// the same contract margins on the model tests, 30% slower prefill
// (SmolLM2 564 against 790 tok/s, Qwen2.5-Coder-1.5B 57 against 97).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")

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
  static constexpr bool kExactCodes = true;

  // c[Rows][32] += x[Rows][depth] @ panel; x rows are `x_stride` halves
  // apart.
  template <int Rows>
  static void micro_kernel(const std::uint16_t* x, int x_stride, const std::uint32_t* panel,
                           int depth, float* c, const GroupFactors& f) {
    const std::uint32_t* pairs = panel;
    for (int g0 = 0, g = 0; g0 < depth; g0 += f.group, ++g) {
      __m512 acc[Rows][2];
      for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      for (int k = g0; k < g0 + f.group; k += 2, pairs += 32) {
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
      for (int half = 0; half < 2; ++half) {
        const __m512 scale = _mm512_loadu_ps(f.scales + g * 32 + 16 * half);
        const __m512 bias = _mm512_loadu_ps(f.biases + g * 32 + 16 * half);
        for (int r = 0; r < Rows; ++r) {
          float* tile = c + r * kTileFloats + 16 * half;
          const __m512 x_sum = _mm512_set1_ps(f.x_sums[r * f.x_sums_stride + g]);
          __m512 sum = _mm512_fmadd_ps(acc[r][half], scale, _mm512_loadu_ps(tile));
          _mm512_storeu_ps(tile, _mm512_fmadd_ps(bias, x_sum, sum));
        }
      }
    }
  }
  static void finish_row(const float* row, float unscale, float* row_sums) {
    for (int i = 0; i < 32; i += 16)
      _mm512_storeu_ps(row_sums + i,
                       _mm512_mul_ps(_mm512_loadu_ps(row + i), _mm512_set1_ps(unscale)));
  }
};

// clang-format off
#include "kernels/qmm_avx512_rows_q6.inc"
#include "kernels/qmm_avx512_half_gemm.inc"
// clang-format on

}  // namespace

void prepare_x_bfloat16(const float* x, int M, int K, std::uint16_t* x_bf16, float* unscale) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + static_cast<std::size_t>(m) * K;
    std::uint16_t* out = x_bf16 + static_cast<std::size_t>(m) * K;
    for (int k = 0; k < K; k += 16) {
      const int count = K - k >= 16 ? 16 : K - k;
      const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
      _mm256_mask_storeu_epi16(out + k, mask,
                               (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, row + k)));
    }
    unscale[m] = 1.0f;
  }
}

void avx512_bf16_gemm(const Problem& p, int n_begin, int n_end) {
  gemm_any_bits(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
