// Prefill quantized matmul in half precision on AVX512-FP16: vfmadd231ph
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
// per panel. Errors: float16 rounding of x and w (2^-11 relative each) and
// of 32-term partial sums; the float32 tile carries the rest.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/qmm_avx512_factors.inc"
// clang-format on

constexpr int kColumns = 32;      // NR: 16 columns x 2 k per vector, two vectors
constexpr int kRows = 8;          // MR: 8 x 2 accumulators
constexpr int kDepth = 256;       // KC: a multiple of every group size
constexpr int kFlushDepth = 32;   // products summed in float16
constexpr float kRowMax = 32.0f;  // largest |x| after the row's scaling

// The panel pairs k: element [k / 2][j] is the float16 weights of column j
// at k (low half) and k + 1 (high half). A 32-bit broadcast of x's halves
// at k and k + 1 then meets it lane for lane, so the micro-kernel needs no
// 16-bit broadcast (a shuffle on the FMA's port) and each column's two
// lanes are added at the end.

// r[i] <- column i of the 16 x 16 matrix of 32-bit elements whose rows are
// r[0..15]: unpacks of 32- and 64-bit elements, then of 128-bit lanes.
void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8) {
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
  }
}

// The 16 pairs (k, k + 1) of 32 k from `packed` (the start of the row's
// 32 k), dequantized with one group's scale and bias.
template <int Bits>
__m512i dequantized_pairs(const std::uint8_t* packed, __m512 s, __m512 b) {
  if constexpr (Bits == 4) {
    // Lane i of the low nibbles holds k = 2i, of the high nibbles 2i + 1.
    __m512 even, odd;
    Vec::unpack4(packed, even, odd);
    const __m512i low = _mm512_cvtepu16_epi32(
        _mm512_cvtps_ph(_mm512_fmadd_ps(even, s, b), _MM_FROUND_TO_NEAREST_INT));
    const __m512i high = _mm512_cvtepu16_epi32(
        _mm512_cvtps_ph(_mm512_fmadd_ps(odd, s, b), _MM_FROUND_TO_NEAREST_INT));
    return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
  } else {
    // Two chunks of 16 consecutive k: their 32 halves in order are the
    // 16 pairs.
    constexpr int kBytes = 16 * Bits / 8;
    const __m512 q0 = Bits == 6 ? Vec::unpack6(packed) : Vec::unpack8(packed);
    const __m512 q1 = Bits == 6 ? Vec::unpack6(packed + kBytes) : Vec::unpack8(packed + kBytes);
    const __m256i h0 = _mm512_cvtps_ph(_mm512_fmadd_ps(q0, s, b), _MM_FROUND_TO_NEAREST_INT);
    const __m256i h1 = _mm512_cvtps_ph(_mm512_fmadd_ps(q1, s, b), _MM_FROUND_TO_NEAREST_INT);
    return _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
  }
}

// Dequantizes weight rows [n0, n0 + 32) x k [k0, k0 + depth) into that
// layout, 16 columns at a time: each column's 16 pairs of 32 k form a
// vector, and a 16 x 16 transpose turns them into 16 rows of the panel;
// rows past N are zero.
template <int Bits>
void pack_panel(const Problem& p, int n0, int k0, int depth, std::uint32_t* panel) {
  constexpr int kGroupsMax = kDepth / 32;
  float group_scale[16][kGroupsMax];
  float group_bias[16][kGroupsMax];
  const std::uint8_t* packed[16];
  const int groups = p.K / p.group_size;
  for (int j0 = 0; j0 < kColumns; j0 += 16) {
    const int valid = p.N - (n0 + j0) < 16 ? p.N - (n0 + j0) : 16;
    for (int j = 0; j < valid; ++j) {
      const int n = n0 + j0 + j;
      const std::size_t first_group = static_cast<std::size_t>(n) * groups + k0 / p.group_size;
      load_as_float(p.scales, p.scale_type, first_group, depth / p.group_size, group_scale[j]);
      load_as_float(p.biases, p.scale_type, first_group, depth / p.group_size, group_bias[j]);
      packed[j] = p.w + (static_cast<std::size_t>(n) * p.K + k0) * Bits / 8;
    }
    for (int k = 0; k < depth; k += 32) {
      __m512i rows[16];
      const int g = k / p.group_size;
      for (int j = 0; j < 16; ++j) {
        rows[j] = j < valid ? dequantized_pairs<Bits>(packed[j] + k * Bits / 8,
                                                      _mm512_set1_ps(group_scale[j][g]),
                                                      _mm512_set1_ps(group_bias[j][g]))
                            : _mm512_setzero_si512();
      }
      transpose16(rows);
      for (int i = 0; i < 16; ++i)
        _mm512_storeu_si512(panel + (k / 2 + i) * kColumns + j0, rows[i]);
    }
  }
}

// pack_panel for row-interleaved 4-bit weights: each 32 bytes of a block
// are 16 rows' pairs at k and at k + 2, so a panel row comes out of one
// conversion with no transpose. The same values as pack_panel<4> gives
// for the same weights in MLX's layout.
void pack_panel_rows(const Problem& p, int n0, int k0, int depth, std::uint32_t* panel) {
  const int groups = p.K / p.group_size;
  // Lane 2i and 2i + 1 take row i's factor (rows 0-7, then 8-15).
  const __m512i first_rows = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i last_rows = _mm512_add_epi32(first_rows, _mm512_set1_epi32(8));
  for (int j0 = 0; j0 < kColumns; j0 += 16) {
    const int block = (n0 + j0) / 16;
    if (n0 + j0 >= p.N) {
      for (int k = 0; k < depth; k += 2)
        _mm512_storeu_si512(panel + k / 2 * kColumns + j0, _mm512_setzero_si512());
      continue;
    }
    const std::uint8_t* units = p.w + static_cast<std::size_t>(block) * (p.K / 4) * 32;
    for (int k = 0; k < depth; k += 4) {
      const std::size_t at =
          (static_cast<std::size_t>(block) * groups + (k0 + k) / p.group_size) * 16;
      const __m512 scale = load_factors(p.scales, p.scale_type, at, 16);
      const __m512 bias = load_factors(p.biases, p.scale_type, at, 16);
      const __m512 scales[2] = {_mm512_permutexvar_ps(first_rows, scale),
                                _mm512_permutexvar_ps(last_rows, scale)};
      const __m512 biases[2] = {_mm512_permutexvar_ps(first_rows, bias),
                                _mm512_permutexvar_ps(last_rows, bias)};
      const __m512i bytes = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(units + (k0 + k) / 4 * 32)));
      const __m512i pairs[2] = {_mm512_and_si512(bytes, _mm512_set1_epi16(0x000F)),
                                _mm512_srli_epi16(bytes, 4)};
      for (int half = 0; half < 2; ++half) {  // pairs at k, then at k + 2
        __m256i rows[2];
        for (int r = 0; r < 2; ++r) {
          const __m512 q = _mm512_cvtepi32_ps(
              _mm512_cvtepu16_epi32(r == 0 ? _mm512_castsi512_si256(pairs[half])
                                           : _mm512_extracti64x4_epi64(pairs[half], 1)));
          rows[r] =
              _mm512_cvtps_ph(_mm512_fmadd_ps(q, scales[r], biases[r]), _MM_FROUND_TO_NEAREST_INT);
        }
        _mm512_storeu_si512(panel + (k / 2 + half) * kColumns + j0,
                            _mm512_inserti64x4(_mm512_castsi256_si512(rows[0]), rows[1], 1));
      }
    }
  }
}

// c[Rows][2 * 32] += x[Rows][depth] @ panel: float16 products and partial
// sums over kFlushDepth k, added into the float32 tile, which keeps each
// column's even-k and odd-k sums apart (element 2j + parity for column
// j's... see gemm_bits); x rows are `x_stride` halves apart.
template <int Rows>
void micro_kernel(const std::uint16_t* x, int x_stride, const std::uint32_t* panel, int depth,
                  float* c) {
  for (int k0 = 0; k0 < depth; k0 += kFlushDepth) {
    const int k_end = k0 + kFlushDepth < depth ? k0 + kFlushDepth : depth;
    __m512h acc[Rows][2];
    for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ph();
    const std::uint32_t* pairs = panel + k0 / 2 * kColumns;
    for (int k = k0; k < k_end; k += 2, pairs += kColumns) {
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
        float* out = c + r * 2 * kColumns + h * 32;
        const __m512 low = _mm512_cvtph_ps(_mm512_castsi512_si256(bits));
        const __m512 high = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1));
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), low));
        _mm512_storeu_ps(out + 16, _mm512_add_ps(_mm512_loadu_ps(out + 16), high));
      }
    }
  }
}

template <int Rows = kRows>
void micro_kernel_rows(int rows, const std::uint16_t* x, int x_stride, const std::uint32_t* panel,
                       int depth, float* c) {
  if constexpr (Rows > 1) {
    if (rows < Rows) return micro_kernel_rows<Rows - 1>(rows, x, x_stride, panel, depth, c);
  }
  micro_kernel<Rows>(x, x_stride, panel, depth, c);
}

// Columns [n_begin, n_end) in panels of 32. The tile holds, per row, 64
// floats: column j's sums over even k and odd k at 2j and 2j + 1.
template <int Bits>
void gemm_bits(const Problem& p, int n_begin, int n_end) {
  auto* panel = reinterpret_cast<std::uint32_t*>(thread_scratch(0, kDepth / 2 * kColumns));
  float* tile = thread_scratch(1, static_cast<std::size_t>(p.M) * 2 * kColumns);
  // Even-position and odd-position floats of two vectors.
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (int n0 = n_begin; n0 < n_end; n0 += kColumns) {
    std::memset(tile, 0, sizeof(float) * p.M * 2 * kColumns);
    for (int k0 = 0; k0 < p.K; k0 += kDepth) {
      const int depth = p.K - k0 < kDepth ? p.K - k0 : kDepth;
      if (Bits == 4 && p.row_interleaved)
        pack_panel_rows(p, n0, k0, depth, panel);
      else
        pack_panel<Bits>(p, n0, k0, depth, panel);
      for (int m0 = 0; m0 < p.M; m0 += kRows) {
        micro_kernel_rows(p.M - m0, p.x_f16 + static_cast<std::size_t>(m0) * p.K + k0, p.K, panel,
                          depth, tile + static_cast<std::size_t>(m0) * 2 * kColumns);
      }
    }
    const int columns = (n_end < n0 + kColumns ? n_end : n0 + kColumns) - n0;
    alignas(64) float row_sums[kColumns];
    for (int m = 0; m < p.M; ++m) {
      const float* row = tile + static_cast<std::size_t>(m) * 2 * kColumns;
      const __m512 unscale = _mm512_set1_ps(p.x_f16_unscale[m]);
      for (int i = 0; i < kColumns; i += 16) {
        const __m512 a = _mm512_loadu_ps(row + 2 * i), b = _mm512_loadu_ps(row + 2 * i + 16);
        const __m512 sum =
            _mm512_add_ps(_mm512_permutex2var_ps(a, evens, b), _mm512_permutex2var_ps(a, odds, b));
        _mm512_store_ps(row_sums + i, _mm512_mul_ps(sum, unscale));
      }
      store_from_float(row_sums, columns, p.out, p.out_type,
                       static_cast<std::size_t>(m) * p.N + n0);
    }
  }
}

}  // namespace

void prepare_x_float16(const float* x, int M, int K, std::uint16_t* x_f16, float* unscale) {
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
    std::uint16_t* out = x_f16 + static_cast<std::size_t>(m) * K;
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
  switch (p.bits) {
    case 4:
      return gemm_bits<4>(p, n_begin, n_end);
    case 6:
      return gemm_bits<6>(p, n_begin, n_end);
    default:
      return gemm_bits<8>(p, n_begin, n_end);
  }
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#endif
