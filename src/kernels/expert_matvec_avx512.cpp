// expert_matvec.h on AVX-512: sixteen output rows at once, each lane
// running one row's k in order (the same rounding steps as the scalar
// form, so the same bits), its code words gathered from its row.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/expert_matvec.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels::expert_matvec {
namespace {

// float → bfloat16 → float as MLX rounds: to nearest even, NaN canonical.
inline __m512 round_bf16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  u = _mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  u = _mm512_mask_mov_epi32(u, nan, _mm512_set1_epi32(0x7FC00000));
  return _mm512_castsi512_ps(u);
}

inline float from_bf16(uint16_t bits) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits) << 16)));
}

// 16 rows' bfloat16 factors of group g (rows past `count` read as 0).
inline __m512 factors(const uint16_t* all, int groups, int g, int count) {
  alignas(64) uint32_t bits[16] = {};
  for (int lane = 0; lane < count; ++lane)
    bits[lane] = static_cast<uint32_t>(all[static_cast<std::size_t>(lane) * groups + g]) << 16;
  return _mm512_castsi512_ps(_mm512_load_si512(bits));
}

template <int Bits>
void block(const Job& job, int first, int count) {
  constexpr int per_word = 32 / Bits;
  const int words = job.K / per_word, groups = job.K / job.group_size;
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1u);
  const __m512i row_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(words));
  const uint32_t* rows = job.w + static_cast<std::size_t>(first) * words;
  const uint16_t* scales = job.scales + static_cast<std::size_t>(first) * groups;
  const uint16_t* biases = job.biases + static_cast<std::size_t>(first) * groups;
  const __m512i mask = _mm512_set1_epi32((1 << Bits) - 1);
  __m512 sum = _mm512_setzero_ps();
  const int words_per_group = job.group_size / per_word;
  for (int g = 0; g < groups; ++g) {
    const __m512 scale = factors(scales, groups, g, count);
    const __m512 bias = factors(biases, groups, g, count);
    for (int word = g * words_per_group; word < (g + 1) * words_per_group; ++word) {
      const __m512i codes = _mm512_mask_i32gather_epi32(
          _mm512_setzero_si512(), lanes, _mm512_add_epi32(row_offsets, _mm512_set1_epi32(word)),
          rows, 4);
      const uint16_t* x = job.x + word * per_word;
      for (int p = 0; p < per_word; ++p) {
        const __m512i code = _mm512_and_si512(_mm512_srli_epi32(codes, p * Bits), mask);
        const __m512 weight = round_bf16(
            _mm512_add_ps(round_bf16(_mm512_mul_ps(scale, _mm512_cvtepi32_ps(code))), bias));
        const __m512 product = round_bf16(_mm512_mul_ps(_mm512_set1_ps(from_bf16(x[p])), weight));
        sum = round_bf16(_mm512_add_ps(sum, product));
      }
    }
  }
  // Each lane's sum is a bfloat16 already: its upper half.
  const __m256i halves = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(sum), 16));
  _mm256_mask_storeu_epi16(job.out + first, lanes, halves);
}

}  // namespace

void rows_avx512(const Job& job, int first, int last) {
  for (int n = first; n < last; n += 16) {
    const int count = last - n < 16 ? last - n : 16;
    switch (job.bits) {
      case 2:
        block<2>(job, n, count);
        break;
      case 4:
        block<4>(job, n, count);
        break;
      case 8:
        block<8>(job, n, count);
        break;
      default:
        rows_scalar(job, n, n + count);
    }
  }
}

}  // namespace mlx_cpp::kernels::expert_matvec

#pragma GCC pop_options
#else
#include "kernels/expert_matvec.h"
namespace mlx_cpp::kernels::expert_matvec {
void rows_avx512(const Job& job, int first, int last) {
  rows_scalar(job, first, last);
}
}  // namespace mlx_cpp::kernels::expert_matvec
#endif
