// Decode quantized matmul for row-interleaved 4-, 6- and 8-bit weights
// (qmm_kernels.h, interleave_rows) with 16-bit integer activations on AVX2.
//
// Each 32-bit lane of the accumulators is one weight row: a unit's bytes as
// words (qmm_avx2_rows_unit.inc) hold the pairs (k, k + 1) of 8 rows, and
// vpmaddwd with a 32-bit broadcast of x's pair adds both products into each
// row's lane. Per group the integer sums are converted once and multiplied
// by a vector of 8 rows' scales, and the bias term is one FMA with 8 rows'
// biases: no horizontal sums and no per-row factor loads, which took as
// much time as the dot products in the MLX-layout kernel
// (qmm_avx2_int16.cpp) on short rows such as SmolLM2's 576.
//
// A block of 16 weight rows meets up to four rows of x at once, so a
// batched decode step unpacks each unit once for them and reads the
// block's weights from memory once for all rows. A row's result never
// depends on the other rows of the call: its integer dots are exact, and
// its groups are scaled and summed in k order by the same instructions
// whichever rows it runs with, so a sequence decoded in a batch gets the
// bits it gets alone.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_TARGET_BEGIN("avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace {

// clang-format off
#include "kernels/qmm_avx2_rows_unit.inc"
// clang-format on

constexpr int kRowsPerBlock = 16;
// Weights are asked for this far ahead of their use, one cache line at a
// time, as in the AVX-512 kernel (qmm_avx512_int16_rows.cpp).
constexpr int kPrefetchBytes = 4096;

// x's int16 pair at k and k + 1, broadcast to every 32-bit lane.
inline __m256i pair_at(const std::int16_t* x, int k) {
  std::int32_t pair;
  std::memcpy(&pair, x + k, sizeof(pair));
  return _mm256_set1_epi32(pair);
}

// Weight rows [16 block, 16 block + 16) x rows [m0, m0 + Rows) of x, into
// result[m][column ..] (rows `columns` apart).
template <int Bits, int Group, ScalarType Type, int Rows>
void block_rows(const Problem& p, int block, int m0, float* result, int columns, int column) {
  constexpr int kUnitsPerGroup = Group / 4;
  constexpr int kUnitBytes = kRowUnitBytes<Bits>;
  const int groups = p.K / Group;
  const std::uint8_t* w = p.w + static_cast<std::size_t>(block) * (p.K / 4) * kUnitBytes;
  const std::size_t factors = static_cast<std::size_t>(block) * groups * kRowsPerBlock;
  const Int16RowsOfX<Rows> rows(p, m0, groups);
  const auto& x = rows.values;
  const auto& x_scale = rows.scales;
  const auto& x_sum = rows.sums;
  __m256 total[Rows][2];
  for (int r = 0; r < Rows; ++r) total[r][0] = total[r][1] = _mm256_setzero_ps();
  for (int g = 0; g < groups; ++g) {
    __m256i dot[Rows][2];
    for (int r = 0; r < Rows; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
    const std::uint8_t* units = w + static_cast<std::size_t>(g) * kUnitsPerGroup * kUnitBytes;
    for (int u = 0; u < kUnitsPerGroup; ++u) {
      if ((u * kUnitBytes) % 64 < kUnitBytes) {
        _mm_prefetch(reinterpret_cast<const char*>(units + u * kUnitBytes + kPrefetchBytes),
                     _MM_HINT_T0);
      }
      __m256i pairs[4];
      unpack_row_unit<Bits>(units + u * kUnitBytes, pairs);
      const int k = g * Group + 4 * u;
      for (int r = 0; r < Rows; ++r) {
        const __m256i first = pair_at(x[r], k), second = pair_at(x[r], k + 2);
        for (int half = 0; half < 2; ++half) {
          dot[r][half] = _mm256_add_epi32(
              dot[r][half], _mm256_add_epi32(_mm256_madd_epi16(pairs[half], first),
                                             _mm256_madd_epi16(pairs[2 + half], second)));
        }
      }
    }
    const std::size_t at = factors + static_cast<std::size_t>(g) * kRowsPerBlock;
    for (int half = 0; half < 2; ++half) {
      const __m256 scale = load_row_factors<Type>(p.scales, at + 8 * half);
      const __m256 bias = load_row_factors<Type>(p.biases, at + 8 * half);
      for (int r = 0; r < Rows; ++r) {
        const __m256 scaled = _mm256_mul_ps(scale, _mm256_set1_ps(x_scale[r][g]));
        total[r][half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][half]), scaled, total[r][half]);
        total[r][half] = _mm256_fmadd_ps(bias, _mm256_set1_ps(x_sum[r][g]), total[r][half]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float* out = result + static_cast<std::size_t>(m0 + r) * columns + column;
    _mm256_storeu_ps(out, total[r][0]);
    _mm256_storeu_ps(out + 8, total[r][1]);
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

void avx2_gemv_int16_rows(const Problem& p, int n_begin, int n_end) {
  gemv_any_bits(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
