// Decode quantized matmul for 4-bit weights with bfloat16 activations on
// AVX-512 BF16: one vdpbf16ps multiplies 32 pairs of bfloat16 and adds each
// pair's products into a float32 lane, so 64 weights cost two of them per
// row instead of four float FMAs and four int-to-float conversions.
//
// A nibble q becomes a bfloat16 without a conversion: the bit pattern
// 0x4300 | q is exactly 128 + q. The kernel therefore computes
// sum x * (128 + q), and the group's bias absorbs the 128: per group
//   sum_k x_k (s q_k + b) = s sum_k x_k (128 + q_k) + (b - 128 s) sum_k x_k.
// The sums of x are taken over the same bfloat16-rounded x, so the 128 terms
// cancel up to float32 accumulation; the only error left is rounding x to
// bfloat16 (2^-9 relative per element, no outliers: unlike int8 blocks, one
// large activation does not coarsen its neighbours).
//
// x layout (Problem::x_bf16): per 64 k, the 32 even k then the 32 odd k, so
// the low nibbles of 32 packed bytes meet the first half. Lane i of a
// chunk's dot covers k [4i, 4i + 4) of the chunk.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

constexpr int kChunkK = 64;
constexpr int kChunkBytes = 32;
constexpr float kNibbleOffset = 128.0f;

// Index of each lane's group among the groups starting at the chunk's first:
// lane i starts at k = 4i, and group sizes are powers of two.
__m512i lane_group_index(int group_shift) {
  const __m512i lane_k =
      _mm512_set_epi32(60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0);
  return _mm512_srl_epi32(lane_k, _mm_cvtsi32_si128(group_shift));
}

// clang-format off
#include "kernels/qmm_avx512_factors.inc"
// clang-format on

// One weight row's scales as float32 and its biases folded with the nibble
// offset, followed by 16 zeros so a chunk may load 16 groups from anywhere.
void load_row_factors(const Problem& p, int n, int groups, float* scale, float* bias) {
  const std::size_t first = static_cast<std::size_t>(n) * groups;
  const __m512 offset = _mm512_set1_ps(kNibbleOffset);
  for (int g = 0; g < groups + 16; g += 16) {
    const int count = groups - g < 0 ? 0 : groups - g;
    const __m512 s = load_factors(p.scales, p.scale_type, first + g, count);
    const __m512 b = load_factors(p.biases, p.scale_type, first + g, count);
    _mm512_storeu_ps(scale + g, s);
    _mm512_storeu_ps(bias + g, _mm512_fnmadd_ps(offset, s, b));
  }
}

template <int Rows, int Cols>
void gemv_block(const Problem& p, int m0, int n, float* factors, float* result, int columns,
                int n_begin) {
  const int groups = p.K / p.group_size;
  const int stride = (groups + 31) / 16 * 16;
  const int chunks = p.k_padded / kChunkK;
  const std::size_t row_bytes = static_cast<std::size_t>(p.K) / 2;
  const int group_shift = __builtin_ctz(static_cast<unsigned>(p.group_size));  // a power of two
  const __m512i group_index = lane_group_index(group_shift);
  const __m512i nibble = _mm512_set1_epi16(0x000F);
  const __m512i offset_bits = _mm512_set1_epi16(0x4300);
  float* scale[Cols];
  float* bias[Cols];
  const std::uint8_t* packed[Cols];
  for (int j = 0; j < Cols; ++j) {
    scale[j] = factors + 2 * j * stride;
    bias[j] = scale[j] + stride;
    load_row_factors(p, n + j, groups, scale[j], bias[j]);
    packed[j] = p.w + (n + j) * row_bytes;
  }
  // The next block's scales and biases, for the same reason as its weights.
  prefetch_factor_rows(p, n + Cols, Cols, groups);
  const std::uint16_t* x[Rows];
  for (int r = 0; r < Rows; ++r) x[r] = p.x_bf16 + static_cast<std::size_t>(m0 + r) * p.k_padded;
  __m512 total[Rows][Cols];
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) total[r][j] = _mm512_setzero_ps();
  }
  for (int c = 0; c < chunks; ++c) {
    const int bytes = static_cast<int>(row_bytes) - c * kChunkBytes;
    const __mmask32 load_mask = bytes >= kChunkBytes ? ~__mmask32{0} : (__mmask32{1} << bytes) - 1;
    const int group0 = (c * kChunkK) >> group_shift;
    __m512bh x_even[Rows], x_odd[Rows];
    for (int r = 0; r < Rows; ++r) {
      x_even[r] = (__m512bh)_mm512_loadu_si512(x[r] + c * kChunkK);
      x_odd[r] = (__m512bh)_mm512_loadu_si512(x[r] + c * kChunkK + 32);
    }
    for (int j = 0; j < Cols; ++j) {
      // The rows the next block reads, at the same offset, one cache line
      // per two chunks: the hardware prefetcher follows Cols interleaved
      // rows poorly (measured 8-10 GB/s on one core without this, 12.5-14
      // with it, 15 for a plain sequential read).
      if ((c & 1) == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(packed[j] + c * kChunkBytes + Cols * row_bytes),
                     _MM_HINT_T0);
      }
      const __m512i w =
          _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(load_mask, packed[j] + c * kChunkBytes));
      // (w & 0xF) | 0x4300 and (w >> 4) | 0x4300: 128 + each nibble.
      const __m512bh low = (__m512bh)_mm512_ternarylogic_epi32(w, nibble, offset_bits, 0xEA);
      const __m512bh high = (__m512bh)_mm512_or_si512(_mm512_srli_epi16(w, 4), offset_bits);
      const __m512 lane_scale =
          _mm512_permutexvar_ps(group_index, _mm512_loadu_ps(scale[j] + group0));
      for (int r = 0; r < Rows; ++r) {
        __m512 dot = _mm512_dpbf16_ps(_mm512_setzero_ps(), low, x_even[r]);
        dot = _mm512_dpbf16_ps(dot, high, x_odd[r]);
        total[r][j] = _mm512_fmadd_ps(dot, lane_scale, total[r][j]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    const float* sums = p.x_group_sums + static_cast<std::size_t>(m0 + r) * groups;
    for (int j = 0; j < Cols; ++j) {
      __m512 bias_term = _mm512_setzero_ps();
      for (int g = 0; g < groups; g += 16) {
        const int count = groups - g < 16 ? groups - g : 16;
        const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
        bias_term = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, bias[j] + g),
                                    _mm512_maskz_loadu_ps(mask, sums + g), bias_term);
      }
      result[r * columns + (n + j - n_begin)] =
          _mm512_reduce_add_ps(_mm512_add_ps(total[r][j], bias_term));
    }
  }
}

template <int Rows>
void gemv_rows(const Problem& p, int m0, int n_begin, int n_end) {
  const int groups = p.K / p.group_size;
  const int columns = n_end - n_begin;
  const std::size_t factor_floats = 2 * static_cast<std::size_t>((groups + 31) / 16 * 16);
  float* factors = thread_scratch(0, gemv_columns(Rows) * factor_floats);
  float* result = thread_scratch(1, static_cast<std::size_t>(Rows) * columns);
  for_each_column_block<Rows>(n_begin, n_end, [&](auto cols, int n) {
    gemv_block<Rows, decltype(cols)::value>(p, m0, n, factors, result, columns, n_begin);
  });
  store_row_block(p, result, Rows, m0, n_begin, columns);
}

}  // namespace

void avx512_bf16_gemv_q4(const Problem& p, int n_begin, int n_end) {
  for_each_row_block(
      p.M, [&](auto rows, int m0) { gemv_rows<decltype(rows)::value>(p, m0, n_begin, n_end); });
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
