// Decode quantized matmul for row-interleaved 4-, 6- and 8-bit weights
// (qmm_kernels.h, interleave_rows) with 16-bit integer activations on
// AVX-512 VNNI.
//
// Each lane of the accumulators is one weight row: a unit's bytes as words
// (4-bit ones zero-extended first, 6-bit ones spread by
// qmm_avx512_rows_q6.inc), masked or shifted, hold the pairs (k, k + 1) of
// 16 rows,
// and one vpdpwssd with a 32-bit broadcast of x's pair adds both products
// into each row's lane. Per group the integer sums are converted once and
// multiplied by a vector of 16 rows' scales, and the bias term is one FMA
// with 16 rows' biases: no horizontal sums and no per-row factor loads,
// which took most of the MLX-layout kernel's time on short rows (K = 576:
// 15-16 G weights/s per core there, 36-47 G here in a standalone test;
// SmolLM2's 8-bit tied head, N = 49152: 5.2 GB/s on one core in MLX's
// layout).
// A block of 16 weight rows meets up to four rows of x at once (a batched
// decode step, a speculative verify), so each unit is unpacked once for
// them and the block's weights are read from memory once for all rows.
// Rounding and sums are those of qmm_avx512_int16.cpp (exact integer dots
// per group, one float32 scaling each), in another order. A row's groups
// are scaled and summed by the same instructions whichever rows it runs
// with, so its result never depends on the other rows of the call.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

// clang-format off
#include "kernels/qmm_avx512_factors.inc"
#include "kernels/qmm_avx512_rows_q6.inc"
// clang-format on

constexpr int kRowsPerBlock = 16;
// 16 rows x 4 k
template <int Bits>
constexpr int kUnitBytes = 16 * 4 * Bits / 8;
// Units per prefetched cache line (a 48-byte unit: one prefetch each).
template <int Bits>
constexpr int kUnitsPerLine = 64 / kUnitBytes<Bits>;
// Weights are asked for this far ahead of their use: with the hardware
// prefetcher alone, one core streamed ~8 GB/s through this kernel in a
// decode step, against ~13.5 for a plain sequential read. SmolLM2 decode,
// alternating runs (`mlx-cpp bench -p 512 -g 64 -n 1`, 10 rounds): no
// prefetch 97 tok/s median, 2 KB ahead 115 (10 of 10 rounds faster), 4 KB
// 123 (7 of 8 faster than 2 KB); 8 KB no better.
constexpr int kPrefetchBytes = 4096;

// x's int16 pair at k and k + 1, broadcast to every 32-bit lane.
inline __m512i pair_at(const std::int16_t* x, int k) {
  std::int32_t pair;
  std::memcpy(&pair, x + k, sizeof(pair));
  return _mm512_set1_epi32(pair);
}

// acc + w . (x's pair at x[0], x[1] in every 32-bit lane). GCC 12 loads
// the pair with a vpbroadcastd of its own before each vpdpwssd, which
// doubles the instructions of a unit when it meets four rows of x; the
// instruction's embedded broadcast ({1to16}) reads it in the same
// instruction. Clang folds the broadcast itself.
inline __m512i dot_pair(__m512i acc, __m512i w, const std::int16_t* x) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpwssd %2%{1to16%}, %1, %0"
      : "+v"(acc)
      : "v"(w), "m"(*reinterpret_cast<const std::int16_t(*)[2]>(x)));
  return acc;
#else
  return _mm512_dpwssd_epi32(acc, w, pair_at(x, 0));
#endif
}

// Unit u's codes as 16-bit pairs: lane i of `first` holds row i's
// (k, k + 1), of `second` its (k + 2, k + 3).
template <int Bits>
inline void unpack_unit(const std::uint8_t* units, int u, __m512i& first, __m512i& second) {
  const std::uint8_t* unit = units + u * kUnitBytes<Bits>;
  if constexpr (Bits == 4) {
    const __m512i w =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit)));
    first = _mm512_and_si512(w, _mm512_set1_epi16(0x000F));
    second = _mm512_srli_epi16(w, 4);
  } else if constexpr (Bits == 6) {
    unpack_rows_q6(unit, first, second);
  } else {
    const __m512i w = _mm512_loadu_si512(unit);
    first = _mm512_and_si512(w, _mm512_set1_epi16(0x00FF));
    second = _mm512_srli_epi16(w, 8);
  }
}

// The 16 weight rows of block `block` x rows [m0, m0 + Rows) of x, into
// result[m][column ..] (rows `columns` apart). Each unit is unpacked once
// for all Rows rows of x.
template <int Bits, int Group, ScalarType Type, int Rows>
void block_rows(const Problem& p, int block, int m0, float* result, int columns, int column) {
  const int groups = p.K / Group;
  constexpr int kUnitsPerGroup = Group / 4;
  const std::uint8_t* w = p.w + static_cast<std::size_t>(block) * (p.K / 4) * kUnitBytes<Bits>;
  const std::size_t factors = static_cast<std::size_t>(block) * groups * kRowsPerBlock;
  const Int16RowsOfX<Rows> rows(p, m0, groups);
  const auto& x = rows.values;
  const auto& x_scale = rows.scales;
  const auto& x_sum = rows.sums;
  __m512 total[Rows], bias_total[Rows];
  for (int r = 0; r < Rows; ++r) total[r] = bias_total[r] = _mm512_setzero_ps();
  for (int g = 0; g < groups; ++g) {
    // Two accumulators per row halve the dependent chain of vpdpwssd.
    __m512i even[Rows], odd[Rows];
    for (int r = 0; r < Rows; ++r) even[r] = odd[r] = _mm512_setzero_si512();
    const std::uint8_t* units = w + static_cast<std::size_t>(g) * kUnitsPerGroup * kUnitBytes<Bits>;
    const int k0 = g * Group;
    for (int u = 0; u < kUnitsPerGroup; u += kUnitsPerLine<Bits>) {
      _mm_prefetch(reinterpret_cast<const char*>(units + u * kUnitBytes<Bits> + kPrefetchBytes),
                   _MM_HINT_T0);
      for (int i = 0; i < kUnitsPerLine<Bits>; ++i) {
        __m512i first, second;
        unpack_unit<Bits>(units, u + i, first, second);
        const int k = k0 + 4 * (u + i);
        for (int r = 0; r < Rows; ++r) {
          even[r] = dot_pair(even[r], first, x[r] + k);
          odd[r] = dot_pair(odd[r], second, x[r] + k + 2);
        }
      }
    }
    const std::size_t at = factors + static_cast<std::size_t>(g) * kRowsPerBlock;
    const __m512 scale = load_masked<Type>(p.scales, at, 0xFFFF);
    const __m512 bias = load_masked<Type>(p.biases, at, 0xFFFF);
    for (int r = 0; r < Rows; ++r) {
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(even[r], odd[r]));
      total[r] =
          _mm512_fmadd_ps(dot, _mm512_mul_ps(scale, _mm512_set1_ps(x_scale[r][g])), total[r]);
      bias_total[r] = _mm512_fmadd_ps(bias, _mm512_set1_ps(x_sum[r][g]), bias_total[r]);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    _mm512_storeu_ps(result + static_cast<std::size_t>(m0 + r) * columns + column,
                     _mm512_add_ps(total[r], bias_total[r]));
  }
}

template <int Bits, int Group, ScalarType Type>
void gemv_rows(const Problem& p, int n_begin, int n_end) {
  const int columns = n_end - n_begin;
  float* result = thread_scratch(1, static_cast<std::size_t>(p.M) * columns);
  for (int n = n_begin; n < n_end; n += kRowsPerBlock) {
    for_each_row_block(p.M, [&](auto rows, int m0) {
      block_rows<Bits, Group, Type, decltype(rows)::value>(p, n / kRowsPerBlock, m0, result,
                                                           columns, n - n_begin);
    });
  }
  for (int m = 0; m < p.M; ++m) {
    store_from_float(result + static_cast<std::size_t>(m) * columns, columns, p.out, p.out_type,
                     static_cast<std::size_t>(m) * p.N + n_begin);
  }
}

// clang-format off
#include "kernels/qmm_rows_dispatch.inc"
// clang-format on

}  // namespace

void avx512_vnni_gemv_int16_rows(const Problem& p, int n_begin, int n_end) {
  gemv_any_bits(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
