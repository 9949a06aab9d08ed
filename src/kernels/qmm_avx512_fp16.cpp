// Prefill quantized matmul in float16 on AVX512-FP16: vfmadd231ph
// multiplies and adds 32 float16 lanes per instruction at the rate of the
// float32 FMA's 16 (182 against 85 G multiply-adds/s per core measured by
// build/bench/instruction_throughput), so the GEMM's inner loop does twice
// the work per instruction.
//
// Float16 sums would lose precision and range over a long k, so the
// micro-kernel adds only kFlushDepth products in float16 before it adds
// the partial sums into a float32 tile. x is scaled per row by a power of
// two (exact) so its largest |value| is 32: a partial sum of 32 products
// overflows float16 only if the weights average |w| > 64. Weights are
// dequantized (scale * q + bias, in float32) and rounded to float16 once
// per panel (qmm_avx512_half_gemm.inc). Errors: float16 rounding of x and
// w (2^-11 relative each) and of 32-term partial sums; the float32 tile
// carries the rest.
#include "kernels/simd_target.h"

#if (defined(__x86_64__) || defined(__i386__)) && MLX_CPP_AVX512_FP16_KERNELS
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/qmm_avx512_factors.inc"
// clang-format on

constexpr int kFlushDepth = 32;   // products summed in float16
constexpr float kRowMax = 32.0f;  // largest |x| after the row's scaling

struct Half {
  static __m256i from_float(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  // Per row of x, 64 floats: column j's sums over even k and odd k at 2j
  // and 2j + 1 (a float16 lane holds one k of one column).
  static constexpr int kTileFloats = 64;
  // Panels hold the dequantized weights.
  static constexpr bool kExactCodes = false;

  // c[Rows][64] += x[Rows][depth] @ panel: float16 products and partial
  // sums over kFlushDepth k, added into the float32 tile; x rows are
  // `x_stride` halves apart.
  template <int Rows>
  static void micro_kernel(const std::uint16_t* x, int x_stride, const std::uint32_t* panel,
                           int depth, float* c, const GroupFactors&) {
    for (int k0 = 0; k0 < depth; k0 += kFlushDepth) {
      const int k_end = k0 + kFlushDepth < depth ? k0 + kFlushDepth : depth;
      __m512h acc[Rows][2];
      for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ph();
      const std::uint32_t* pairs = panel + k0 / 2 * 32;
      for (int k = k0; k < k_end; k += 2, pairs += 32) {
        const __m512h b0 = _mm512_castsi512_ph(_mm512_loadu_si512(pairs));
        const __m512h b1 = _mm512_castsi512_ph(_mm512_loadu_si512(pairs + 16));
        for (int r = 0; r < Rows; ++r) {
          float pair;
          std::memcpy(&pair, x + r * x_stride + k, sizeof(pair));
          const __m512h a = _mm512_castps_ph(_mm512_set1_ps(pair));
          acc[r][0] = _mm512_fmadd_ph(a, b0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ph(a, b1, acc[r][1]);
        }
      }
      for (int r = 0; r < Rows; ++r) {
        for (int h = 0; h < 2; ++h) {
          const __m512i bits = _mm512_castph_si512(acc[r][h]);
          float* out = c + r * kTileFloats + h * 32;
          const __m512 low = _mm512_cvtph_ps(_mm512_castsi512_si256(bits));
          const __m512 high = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1));
          _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), low));
          _mm512_storeu_ps(out + 16, _mm512_add_ps(_mm512_loadu_ps(out + 16), high));
        }
      }
    }
  }

  // Each column's even-k and odd-k sums added, times the row's unscale.
  static void finish_row(const float* row, float unscale, float* row_sums) {
    const __m512i evens =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odds =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int i = 0; i < 32; i += 16) {
      const __m512 a = _mm512_loadu_ps(row + 2 * i), b = _mm512_loadu_ps(row + 2 * i + 16);
      const __m512 sum =
          _mm512_add_ps(_mm512_permutex2var_ps(a, evens, b), _mm512_permutex2var_ps(a, odds, b));
      _mm512_storeu_ps(row_sums + i, _mm512_mul_ps(sum, _mm512_set1_ps(unscale)));
    }
  }
};

// clang-format off
#include "kernels/qmm_avx512_rows_q6.inc"
#include "kernels/qmm_avx512_half_gemm.inc"
// clang-format on

}  // namespace

void prepare_x_float16(const float* x, int M, int K, std::uint16_t* x_half, float* unscale) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + static_cast<std::size_t>(m) * K;
    __m512 largest = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= K; k += 16)
      largest = _mm512_max_ps(largest, _mm512_abs_ps(_mm512_loadu_ps(row + k)));
    float amax = _mm512_reduce_max_ps(largest);
    for (; k < K; ++k) amax = amax > std::fabs(row[k]) ? amax : std::fabs(row[k]);
    // A power of two keeps the scaling exact. A row of subnormal values
    // would ask for 2^127 and more; such values flush to zero in float16
    // whatever the scale.
    const int exponent =
        amax > 0.0f ? std::max(-100, static_cast<int>(std::ceil(std::log2(amax / kRowMax)))) : 0;
    const float scale = std::ldexp(1.0f, -exponent);
    unscale[m] = std::ldexp(1.0f, exponent);
    std::uint16_t* out = x_half + static_cast<std::size_t>(m) * K;
    for (k = 0; k + 16 <= K; k += 16) {
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out + k),
          _mm512_cvtps_ph(_mm512_mul_ps(_mm512_loadu_ps(row + k), _mm512_set1_ps(scale)),
                          _MM_FROUND_TO_NEAREST_INT));
    }
    for (; k < K; ++k) {
      out[k] = static_cast<std::uint16_t>(_cvtss_sh(row[k] * scale, _MM_FROUND_TO_NEAREST_INT));
    }
  }
}

void avx512_fp16_gemm(const Problem& p, int n_begin, int n_end) {
  gemm_any_bits(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
