// expert_matvec.h on AVX2: eight output rows at once, each lane running one
// row's k in order (the same rounding steps as the scalar form, so the
// same bits), its code words gathered from its row.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/expert_matvec.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace mlx_cpp::kernels::expert_matvec {
namespace {

// float → bfloat16 → float as MLX rounds: to nearest even, NaN canonical.
inline __m256 round_bf16(__m256 v) {
  __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  u = _mm256_and_si256(u, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  return _mm256_blendv_ps(_mm256_castsi256_ps(u),
                          _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)), nan);
}

inline float from_bf16(uint16_t bits) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits) << 16)));
}

// 8 rows' bfloat16 factors of group g (rows past `count` read as 0).
inline __m256 factors(const uint16_t* all, int groups, int g, int count) {
  alignas(32) uint32_t bits[8] = {};
  for (int lane = 0; lane < count; ++lane)
    bits[lane] = static_cast<uint32_t>(all[static_cast<std::size_t>(lane) * groups + g]) << 16;
  return _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(bits)));
}

template <int Bits>
void block(const Job& job, int first, int count) {
  constexpr int per_word = 32 / Bits;
  const int words = job.K / per_word, groups = job.K / job.group_size;
  const __m256i lane_ids = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane_ids);
  const __m256i row_offsets = _mm256_mullo_epi32(lane_ids, _mm256_set1_epi32(words));
  const int* rows = reinterpret_cast<const int*>(job.w + static_cast<std::size_t>(first) * words);
  const uint16_t* scales = job.scales + static_cast<std::size_t>(first) * groups;
  const uint16_t* biases = job.biases + static_cast<std::size_t>(first) * groups;
  const __m256i mask = _mm256_set1_epi32((1 << Bits) - 1);
  __m256 sum = _mm256_setzero_ps();
  const int words_per_group = job.group_size / per_word;
  for (int g = 0; g < groups; ++g) {
    const __m256 scale = factors(scales, groups, g, count);
    const __m256 bias = factors(biases, groups, g, count);
    for (int word = g * words_per_group; word < (g + 1) * words_per_group; ++word) {
      const __m256i codes = _mm256_mask_i32gather_epi32(
          _mm256_setzero_si256(), rows, _mm256_add_epi32(row_offsets, _mm256_set1_epi32(word)),
          lanes, 4);
      const uint16_t* x = job.x + word * per_word;
      for (int p = 0; p < per_word; ++p) {
        const __m256i code = _mm256_and_si256(_mm256_srli_epi32(codes, p * Bits), mask);
        const __m256 weight = round_bf16(
            _mm256_add_ps(round_bf16(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(code))), bias));
        const __m256 product = round_bf16(_mm256_mul_ps(_mm256_set1_ps(from_bf16(x[p])), weight));
        sum = round_bf16(_mm256_add_ps(sum, product));
      }
    }
  }
  // Each lane's sum is a bfloat16 already: its upper half.
  alignas(32) uint32_t bits[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(bits), _mm256_castps_si256(sum));
  for (int lane = 0; lane < count; ++lane)
    job.out[first + lane] = static_cast<uint16_t>(bits[lane] >> 16);
}

}  // namespace

void rows_avx2(const Job& job, int first, int last) {
  for (int n = first; n < last; n += 8) {
    const int count = last - n < 8 ? last - n : 8;
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
void rows_avx2(const Job& job, int first, int last) {
  rows_scalar(job, first, last);
}
}  // namespace mlx_cpp::kernels::expert_matvec
#endif
