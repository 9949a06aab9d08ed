// The AVX2 packed-row decoders: 8 codes per vector, as the AVX-512 ones
// (packed_row_decoders_avx512.cpp) with half the lanes; codebooks of up to
// 8 centroids are one permutation, 16 take two and a blend, 256 a gather.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <array>

#include "kernels/packed_row_decoders.h"
#include "kernels/simd_target.h"

MLX_CPP_TARGET_BEGIN("avx2,fma")

namespace mlx_cpp::kernels {
namespace {

// Codes are decoded 32 at a time (bits words), in four quarters of 8 lanes.
// Per lane of a quarter: the word holding the code's first bit and the
// next one, relative to the quarter's first word, and the shifts that take
// the code out of the two.
struct Lanes {
  __m256i word[4], next_word[4], shift[4], back_shift[4], mask;
  int first_word[4];
};

Lanes lanes_for(int bits) {
  Lanes l{};
  for (int quarter = 0; quarter < 4; ++quarter) {
    const int base = 8 * quarter * bits / 32;
    l.first_word[quarter] = base;
    alignas(32) std::array<int, 8> word{}, next{}, shift{}, back{};
    for (int i = 0; i < 8; ++i) {
      const int bit = (8 * quarter + i) * bits;
      word[i] = bit / 32 - base;
      next[i] = bit / 32 + 1 - base;
      shift[i] = bit % 32;
      back[i] = 32 - bit % 32;  // 32: the next word adds nothing
    }
    l.word[quarter] = _mm256_load_si256(reinterpret_cast<const __m256i*>(word.data()));
    l.next_word[quarter] = _mm256_load_si256(reinterpret_cast<const __m256i*>(next.data()));
    l.shift[quarter] = _mm256_load_si256(reinterpret_cast<const __m256i*>(shift.data()));
    l.back_shift[quarter] = _mm256_load_si256(reinterpret_cast<const __m256i*>(back.data()));
  }
  l.mask = _mm256_set1_epi32((1 << bits) - 1);
  return l;
}

const Lanes& lanes(int bits) {
  static const Lanes two = lanes_for(2), three = lanes_for(3), four = lanes_for(4),
                     eight = lanes_for(8);
  switch (bits) {
    case 2:
      return two;
    case 3:
      return three;
    case 4:
      return four;
    default:
      return eight;
  }
}

// Codes [8 * index, 8 * index + 8) of the row (index = 4 * chunk + quarter)
// as int32 lanes; the words are loaded masked, never past the row.
inline __m256i codes_of_quarter(const std::uint32_t* words, int row_words, int chunk, int quarter,
                                int bits, const Lanes& l) {
  const int first = chunk * bits + l.first_word[quarter];
  const int available = row_words - first;
  alignas(32) static const int ramp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const __m256i load = _mm256_cmpgt_epi32(
      _mm256_set1_epi32(available), _mm256_load_si256(reinterpret_cast<const __m256i*>(ramp)));
  const __m256i w = _mm256_maskload_epi32(reinterpret_cast<const int*>(words + first), load);
  const __m256i low =
      _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(w, l.word[quarter]), l.shift[quarter]);
  const __m256i high = _mm256_sllv_epi32(_mm256_permutevar8x32_epi32(w, l.next_word[quarter]),
                                         l.back_shift[quarter]);
  return _mm256_and_si256(_mm256_or_si256(low, high), l.mask);
}

void affine(const std::uint32_t* words, int bits, int width, int group, const float* scales,
            const float* biases, float* dst) {
  const Lanes& l = lanes(bits);
  const int row_words = width * bits / 32;
  for (int chunk = 0; chunk < width / 32; ++chunk)
    for (int quarter = 0; quarter < 4; ++quarter) {
      const int first = chunk * 32 + quarter * 8, g = first / group;
      const __m256 codes =
          _mm256_cvtepi32_ps(codes_of_quarter(words, row_words, chunk, quarter, bits, l));
      _mm256_storeu_ps(dst + first, _mm256_fmadd_ps(codes, _mm256_set1_ps(scales[g]),
                                                    _mm256_set1_ps(biases[g])));
    }
}

void table(const std::uint32_t* words, int bits, int width, int group, const float* table,
           const float* factors, float* dst) {
  const Lanes& l = lanes(bits);
  const int row_words = width * bits / 32;
  const int levels = 1 << bits;
  alignas(32) float low_half[8] = {}, high_half[8] = {};
  for (int i = 0; i < levels && i < 16; ++i) (i < 8 ? low_half[i] : high_half[i - 8]) = table[i];
  const __m256 low_table = _mm256_load_ps(low_half), high_table = _mm256_load_ps(high_half);
  for (int chunk = 0; chunk < width / 32; ++chunk)
    for (int quarter = 0; quarter < 4; ++quarter) {
      const int first = chunk * 32 + quarter * 8, g = first / group;
      const __m256i codes = codes_of_quarter(words, row_words, chunk, quarter, bits, l);
      __m256 values;
      if (bits <= 3) {
        values = _mm256_permutevar8x32_ps(low_table, codes);
      } else if (bits == 4) {  // bit 3 of the code picks the half
        values = _mm256_blendv_ps(_mm256_permutevar8x32_ps(low_table, codes),
                                  _mm256_permutevar8x32_ps(high_table, codes),
                                  _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28)));
      } else {
        values = _mm256_i32gather_ps(table, codes, 4);
      }
      _mm256_storeu_ps(dst + first, _mm256_mul_ps(values, _mm256_set1_ps(factors[g])));
    }
}

const PackedRowDecoders kAvx2{affine, table};

}  // namespace

const PackedRowDecoders& avx2_packed_row_decoders() {
  return kAvx2;
}

}  // namespace mlx_cpp::kernels

MLX_CPP_TARGET_END
#endif
