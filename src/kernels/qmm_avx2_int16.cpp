// Decode quantized matmul for 4-, 6- and 8-bit weights with 16-bit integer
// activations on AVX2 (x rounded to int16 per group as for the AVX-512
// kernels: see qmm_avx512_int16.cpp). vpmaddwd multiplies 16 pairs of
// signed words and adds each lane's two products into a 32-bit lane: with
// the add that follows, two instructions per 16 weights and row, where the
// float gemv spends a conversion and an FMA per 8. The weights' unpacking is
// shared by every row of x the block runs, so a batched decode step pays it
// once per weight.
//
// x layout (Problem::x_i16): per 64 k, the 32 even k then the 32 odd k. A
// unit of 32 k is 16 even and 16 odd words of it (units 2b and 2b + 1 are
// the halves of block b), which meet the low and high parts of the unit's
// weights; a group is 1, 2 or 4 units, whose integer dot is exact.
//
// A row's result never depends on the other rows or columns of the call:
// each (row, column) pair has its own accumulators, its groups are summed in
// k order and reduced by one fixed tree, so a sequence decoded in a batch
// gets the bits it gets alone.
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

// The AVX2 vector traits (sums, half-precision loads) the float kernels use.
// clang-format off
#include "kernels/simd_avx2.inc"
// clang-format on

constexpr int kUnitK = 32;
template <int Bits>
constexpr int kUnitBytes = kUnitK* Bits / 8;  // 16 at 4 bits, 24 at 6, 32 at 8

// One unit's 32 weights as words: those of even k in `low`, of odd k in
// `high`. Reads exactly the unit's bytes.
template <int Bits>
inline void unpack_unit(const std::uint8_t* bytes, __m256i& low, __m256i& high) {
  if constexpr (Bits == 4) {
    // Byte i holds k = 2i (low nibble) and 2i + 1 (high nibble).
    const __m256i w =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
    low = _mm256_and_si256(w, _mm256_set1_epi16(0x000F));
    high = _mm256_srli_epi16(w, 4);
  } else if constexpr (Bits == 8) {
    // Word i holds k = 2i (low byte) and 2i + 1 (high byte).
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes));
    low = _mm256_and_si256(w, _mm256_set1_epi16(0x00FF));
    high = _mm256_srli_epi16(w, 8);
  } else {
    // 24 bytes hold 32 values as one little-endian bit stream; the 128-bit
    // lanes take values 0-15 (bytes 0-11) and 16-31 (bytes 12-23, loaded
    // from byte 8 so nothing past the unit is read). Each word gets the
    // one or two bytes its value spans; a multiply by 2^(10 - offset)
    // moves the value to the top six bits and a shift by 10 brings it down
    // (AVX2 has no per-word variable shift). Even k = 2i start at bit 12i
    // (offset 0 or 4), odd k at bit 12i + 6 (offset 6 or 2).
    const __m256i raw = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(bytes + 8),
                                            reinterpret_cast<const __m128i*>(bytes));
    constexpr char Z = -128;  // a zero byte
    const __m256i even_bytes =
        _mm256_setr_epi8(0, Z, 1, 2, 3, Z, 4, 5, 6, Z, 7, 8, 9, Z, 10, 11,  //
                         4, Z, 5, 6, 7, Z, 8, 9, 10, Z, 11, 12, 13, Z, 14, 15);
    const __m256i odd_bytes =
        _mm256_setr_epi8(0, 1, 2, Z, 3, 4, 5, Z, 6, 7, 8, Z, 9, 10, 11, Z,  //
                         4, 5, 6, Z, 7, 8, 9, Z, 10, 11, 12, Z, 13, 14, 15, Z);
    const __m256i even_shift = _mm256_set1_epi32(64 << 16 | 1024);
    const __m256i odd_shift = _mm256_set1_epi32(256 << 16 | 16);
    low =
        _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(raw, even_bytes), even_shift), 10);
    high =
        _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(raw, odd_bytes), odd_shift), 10);
  }
}

// Lanes [0, left) of a mask (all eight from left = 8 on).
inline __m256i first_lanes(int left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Eight scales (or biases) from `offset` of `total` as float32, lanes
// from `left` on zero. Half-precision factors past the row are read when
// the array goes on (the next row's; masked off after conversion), so a
// row's tail costs no copy; nothing past the array is read.
inline __m256 load_factors(const void* src, ScalarType type, std::size_t offset, int left,
                           std::size_t total) {
  const __m256i lanes = first_lanes(left);
  if (type == ScalarType::float32) {
    return _mm256_maskload_ps(static_cast<const float*>(src) + offset, lanes);
  }
  const auto* from = static_cast<const std::uint16_t*>(src) + offset;
  std::uint16_t tail[8] = {};
  if (left < 8 && offset + 8 > total) {
    std::memcpy(tail, from, sizeof(std::uint16_t) * left);
    from = tail;
  }
  const __m256 f = type == ScalarType::float16 ? Vec::load_f16(from) : Vec::load_bf16(from);
  return left >= 8 ? f : _mm256_and_ps(f, _mm256_castsi256_ps(lanes));
}

// Rows [m0, m0 + Rows) x columns [n, n + Cols), Group k per group.
template <int Bits, int Rows, int Cols, int Group>
void gemv_block(const Problem& p, int m0, int n, float* scratch, float* result, int columns,
                int n_begin) {
  constexpr int kUnitsPerGroup = Group / kUnitK;
  const int groups = p.K / p.group_size;
  const int padded_groups = (groups + 7) / 8 * 8;
  const int stride = int16_scale_stride(p.k_padded, p.group_size);
  const std::size_t row_bytes = static_cast<std::size_t>(p.K) * Bits / 8;
  float* factor = scratch;  // [Cols][Rows][padded_groups]
  const std::uint8_t* packed[Cols];
  __m256 bias_term[Rows][Cols];
  const std::size_t factor_count = static_cast<std::size_t>(p.N) * groups;
  for (int j = 0; j < Cols; ++j) {
    const std::size_t first = static_cast<std::size_t>(n + j) * groups;
    packed[j] = p.w + (n + j) * row_bytes;
    for (int r = 0; r < Rows; ++r) bias_term[r][j] = _mm256_setzero_ps();
    for (int g = 0; g < padded_groups; g += 8) {
      const int left = groups - g;
      const __m256 scale = load_factors(p.scales, p.scale_type, first + g, left, factor_count);
      const __m256 bias = load_factors(p.biases, p.scale_type, first + g, left, factor_count);
      const __m256i valid = first_lanes(left);
      for (int r = 0; r < Rows; ++r) {
        // x scale rows are zero-padded past their groups; the sums row has
        // exactly `groups` entries.
        const float* x_scale = p.x_i16_scales + static_cast<std::size_t>(m0 + r) * stride;
        const float* sums = p.x_group_sums + static_cast<std::size_t>(m0 + r) * groups;
        _mm256_storeu_ps(factor + (j * Rows + r) * padded_groups + g,
                         _mm256_mul_ps(scale, _mm256_loadu_ps(x_scale + g)));
        bias_term[r][j] =
            _mm256_fmadd_ps(bias, _mm256_maskload_ps(sums + g, valid), bias_term[r][j]);
      }
    }
  }
  const std::int16_t* x[Rows];
  for (int r = 0; r < Rows; ++r) x[r] = p.x_i16 + static_cast<std::size_t>(m0 + r) * p.k_padded;
  __m256 total[Rows][Cols];
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) total[r][j] = _mm256_setzero_ps();
  }
  for (int g = 0; g < groups; ++g) {
    __m256i dot[Rows][Cols];
    for (int r = 0; r < Rows; ++r) {
      for (int j = 0; j < Cols; ++j) dot[r][j] = _mm256_setzero_si256();
    }
    for (int i = 0; i < kUnitsPerGroup; ++i) {
      const int u = g * kUnitsPerGroup + i;
      const std::size_t offset = static_cast<std::size_t>(u) * kUnitBytes<Bits>;
      const int x_even = u / 2 * 64 + u % 2 * 16;
      for (int j = 0; j < Cols; ++j) {
        // The rows the next block reads, one cache line at a time: the
        // hardware prefetcher follows Cols interleaved rows poorly.
        if (offset % 64 < kUnitBytes<Bits>) {
          _mm_prefetch(reinterpret_cast<const char*>(packed[j] + offset + Cols * row_bytes),
                       _MM_HINT_T0);
        }
        __m256i low, high;
        unpack_unit<Bits>(packed[j] + offset, low, high);
        for (int r = 0; r < Rows; ++r) {
          const __m256i even = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r] + x_even));
          const __m256i odd =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r] + x_even + 32));
          dot[r][j] = _mm256_add_epi32(dot[r][j], _mm256_add_epi32(_mm256_madd_epi16(low, even),
                                                                   _mm256_madd_epi16(high, odd)));
        }
      }
    }
    for (int j = 0; j < Cols; ++j) {
      for (int r = 0; r < Rows; ++r) {
        const float f = factor[(j * Rows + r) * padded_groups + g];
        total[r][j] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][j]), _mm256_set1_ps(f), total[r][j]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) {
      result[r * columns + (n + j - n_begin)] =
          Vec::sum(_mm256_add_ps(total[r][j], bias_term[r][j]));
    }
  }
}

template <int Bits, int Rows, int Group>
void gemv_rows(const Problem& p, int m0, int n_begin, int n_end) {
  const int columns = n_end - n_begin;
  const int padded_groups = (p.K / p.group_size + 7) / 8 * 8;
  float* scratch =
      thread_scratch(0, static_cast<std::size_t>(gemv_columns(Rows) * Rows) * padded_groups);
  float* result = thread_scratch(1, static_cast<std::size_t>(Rows) * columns);
  for_each_column_block<Rows>(n_begin, n_end, [&](auto cols, int n) {
    gemv_block<Bits, Rows, decltype(cols)::value, Group>(p, m0, n, scratch, result, columns,
                                                         n_begin);
  });
  store_row_block(p, result, Rows, m0, n_begin, columns);
}

template <int Bits, int Group>
void gemv_group(const Problem& p, int n_begin, int n_end) {
  for_each_row_block(p.M, [&](auto rows, int m0) {
    gemv_rows<Bits, decltype(rows)::value, Group>(p, m0, n_begin, n_end);
  });
}

template <int Bits>
void gemv_int16(const Problem& p, int n_begin, int n_end) {
  switch (p.group_size) {
    case 32:
      return gemv_group<Bits, 32>(p, n_begin, n_end);
    case 64:
      return gemv_group<Bits, 64>(p, n_begin, n_end);
    default:
      return gemv_group<Bits, 128>(p, n_begin, n_end);
  }
}

}  // namespace

void avx2_gemv_int16_q4(const Problem& p, int n_begin, int n_end) {
  gemv_int16<4>(p, n_begin, n_end);
}
void avx2_gemv_int16_q6(const Problem& p, int n_begin, int n_end) {
  gemv_int16<6>(p, n_begin, n_end);
}
void avx2_gemv_int16_q8(const Problem& p, int n_begin, int n_end) {
  gemv_int16<8>(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
