// The AVX-512 packed-row decoders: 16 codes per vector, each lane shifting
// its code out of the word (or two words) that hold it, then a fused
// multiply-add (affine) or a table lookup by permutation (TurboQuant's
// codebooks of up to 16 centroids; a gather for 256).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <array>

#include "kernels/packed_row_decoders.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

namespace mlx_cpp::kernels {
namespace {

// Codes are decoded 32 at a time (bits words: whole words for every width),
// in two halves of 16 lanes. Per lane of a half: the word holding the
// code's first bit (relative to the 32 codes' first word), the next word,
// and the shifts that take the code out of the two.
struct Lanes {
  __m512i word[2], next_word[2], shift[2], back_shift[2], mask;
  int bits;
};

Lanes lanes_for(int bits) {
  Lanes l{};
  for (int half = 0; half < 2; ++half) {
    alignas(64) std::array<int, 16> word{}, next{}, shift{}, back{};
    for (int i = 0; i < 16; ++i) {
      const int bit = (16 * half + i) * bits;
      word[i] = bit / 32;
      next[i] = bit / 32 + 1;
      shift[i] = bit % 32;
      back[i] = 32 - bit % 32;  // 32: the next word adds nothing
    }
    l.word[half] = _mm512_load_si512(word.data());
    l.next_word[half] = _mm512_load_si512(next.data());
    l.shift[half] = _mm512_load_si512(shift.data());
    l.back_shift[half] = _mm512_load_si512(back.data());
  }
  l.mask = _mm512_set1_epi32((1 << bits) - 1);
  l.bits = bits;
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

// The words of codes [32 * chunk, 32 * chunk + 32), and the one after where
// the row has it; masked, so no word past the row is read.
inline __m512i chunk_words(const std::uint32_t* words, int row_words, int chunk, int bits) {
  const int first = chunk * bits, available = row_words - first;
  const __mmask16 load = available >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << available) - 1);
  return _mm512_maskz_loadu_epi32(load, words + first);
}

// One half's 16 codes as int32 lanes.
inline __m512i codes_of_half(__m512i w, const Lanes& l, int half) {
  const __m512i low = _mm512_srlv_epi32(_mm512_permutexvar_epi32(l.word[half], w), l.shift[half]);
  const __m512i high =
      _mm512_sllv_epi32(_mm512_permutexvar_epi32(l.next_word[half], w), l.back_shift[half]);
  return _mm512_and_si512(_mm512_or_si512(low, high), l.mask);
}

void affine(const std::uint32_t* words, int bits, int width, int group, const float* scales,
            const float* biases, float* dst) {
  const Lanes& l = lanes(bits);
  const int row_words = width * bits / 32;
  for (int chunk = 0; chunk < width / 32; ++chunk) {
    const __m512i w = chunk_words(words, row_words, chunk, bits);
    for (int half = 0; half < 2; ++half) {
      const int first = chunk * 32 + half * 16, g = first / group;
      const __m512 codes = _mm512_cvtepi32_ps(codes_of_half(w, l, half));
      _mm512_storeu_ps(dst + first, _mm512_fmadd_ps(codes, _mm512_set1_ps(scales[g]),
                                                    _mm512_set1_ps(biases[g])));
    }
  }
}

void table(const std::uint32_t* words, int bits, int width, int group, const float* table,
           const float* factors, float* dst) {
  const Lanes& l = lanes(bits);
  const int row_words = width * bits / 32;
  // Up to 16 centroids sit in one register; 256 are gathered.
  const __m512 centroids =
      bits <= 4 ? _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (1 << bits)) - 1), table)
                : _mm512_setzero_ps();
  for (int chunk = 0; chunk < width / 32; ++chunk) {
    const __m512i w = chunk_words(words, row_words, chunk, bits);
    for (int half = 0; half < 2; ++half) {
      const int first = chunk * 32 + half * 16, g = first / group;
      const __m512i codes = codes_of_half(w, l, half);
      const __m512 values = bits <= 4 ? _mm512_permutexvar_ps(codes, centroids)
                                      : _mm512_i32gather_ps(codes, table, 4);
      _mm512_storeu_ps(dst + first, _mm512_mul_ps(values, _mm512_set1_ps(factors[g])));
    }
  }
}

const PackedRowDecoders kAvx512{affine, table};

}  // namespace

const PackedRowDecoders& avx512_packed_row_decoders() {
  return kAvx512;
}

}  // namespace mlx_cpp::kernels

MLX_CPP_TARGET_END
#endif
