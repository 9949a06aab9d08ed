// Decode quantized matmul with 8-bit activations on AVX-512 VNNI: one
// vpdpbusd multiplies 64 unsigned weight bytes by 64 signed activation
// bytes and adds each four products into a 32-bit lane, so a 64-byte load
// of packed 4-bit weights (128 k) costs two such instructions per row
// instead of eight float FMAs and the conversions in between. Per block of
// 32 k the integer dot is scaled by the weight group's scale times the
// block's activation scale, in float32.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

constexpr int kBlock = 32;  // k per activation scale
constexpr int kChunkBytes = 64;

// Up to 16 consecutive scales (or biases) of one weight row as float32;
// lanes past `count` are zero.
template <ScalarType Type>
__m512 load_scales(const void* base, std::size_t offset, int count) {
  const __mmask16 mask = count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
  if constexpr (Type == ScalarType::float32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(base) + offset);
  } else {
    __m256i half = _mm256_maskz_loadu_epi16(mask, static_cast<const std::uint16_t*>(base) + offset);
    if constexpr (Type == ScalarType::float16) return _mm512_cvtph_ps(half);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
  }
}

// Lane i of a chunk's integer dot covers k [i * W, (i + 1) * W) with W = 8
// (4-bit: a byte holds two k) or 4 (8-bit); these give each lane's index
// into the chunk's first few weight-group scales and activation scales.
__m512i lane_index(int k_per_lane, int k_per_index) {
  alignas(64) std::int32_t index[16];
  for (int i = 0; i < 16; ++i) index[i] = i * k_per_lane / k_per_index;
  return _mm512_load_si512(index);
}

template <int Bits, int Rows, ScalarType Type>
void gemv_rows(const Problem& p, int m0, int n_begin, int n_end) {
  constexpr int kChunkK = kChunkBytes * 8 / Bits;  // 128 or 64
  constexpr int kLaneK = kChunkK / 16;             // 8 or 4
  const int groups = p.K / p.group_size;
  const int chunks = (p.K + kChunkK - 1) / kChunkK;
  const std::size_t row_bytes = static_cast<std::size_t>(p.K) * Bits / 8;
  const int scale_stride = p.k_padded / kBlock + 4;
  const __m512i weight_index = lane_index(kLaneK, p.group_size);
  const __m512i block_index = lane_index(kLaneK, kBlock);
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  const int columns = n_end - n_begin;
  float* result = thread_scratch(1, static_cast<std::size_t>(Rows) * columns);
  const std::int8_t* xq[Rows];
  const float* xq_scale[Rows];
  const float* sums[Rows];
  for (int r = 0; r < Rows; ++r) {
    xq[r] = p.xq + static_cast<std::size_t>(m0 + r) * p.k_padded;
    xq_scale[r] = p.xq_scales + static_cast<std::size_t>(m0 + r) * scale_stride;
    sums[r] = p.x_group_sums + static_cast<std::size_t>(m0 + r) * groups;
  }
  for (int n = n_begin; n < n_end; ++n) {
    const std::uint8_t* packed = p.w + n * row_bytes;
    const std::size_t first_group = static_cast<std::size_t>(n) * groups;
    __m512 total[Rows];
    for (int r = 0; r < Rows; ++r) total[r] = _mm512_setzero_ps();
    for (int c = 0; c < chunks; ++c) {
      const int k0 = c * kChunkK;
      const int bytes = static_cast<int>(row_bytes) - c * kChunkBytes;
      __m512i w = bytes >= kChunkBytes ? _mm512_loadu_si512(packed + c * kChunkBytes)
                                       : _mm512_maskz_loadu_epi8((__mmask64{1} << bytes) - 1,
                                                                 packed + c * kChunkBytes);
      const int group0 = k0 / p.group_size;
      const int chunk_groups = (kChunkK + p.group_size - 1) / p.group_size;
      const int valid_groups = groups - group0 < chunk_groups ? groups - group0 : chunk_groups;
      const __m512 weight_scale = _mm512_permutexvar_ps(
          weight_index, load_scales<Type>(p.scales, first_group + group0, valid_groups));
      __m512i low = w, high = w;
      if constexpr (Bits == 4) {
        low = _mm512_and_si512(w, low_nibbles);
        high = _mm512_and_si512(_mm512_srli_epi16(w, 4), low_nibbles);
      }
      for (int r = 0; r < Rows; ++r) {
        __m512i dot;
        if constexpr (Bits == 4) {
          dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low, _mm512_loadu_si512(xq[r] + k0));
          dot = _mm512_dpbusd_epi32(dot, high, _mm512_loadu_si512(xq[r] + k0 + kChunkBytes));
        } else {
          dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(xq[r] + k0));
        }
        const __m512 x_scale = _mm512_permutexvar_ps(
            block_index, _mm512_castps128_ps512(_mm_loadu_ps(xq_scale[r] + k0 / kBlock)));
        total[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(weight_scale, x_scale),
                                   total[r]);
      }
    }
    // The bias term: sum over groups of bias * (sum of x over the group).
    for (int g = 0; g < groups; g += 16) {
      const int count = groups - g < 16 ? groups - g : 16;
      const __m512 bias = load_scales<Type>(p.biases, first_group + g, count);
      for (int r = 0; r < Rows; ++r) {
        const __m512 sum = load_scales<ScalarType::float32>(sums[r], g, count);
        total[r] = _mm512_fmadd_ps(bias, sum, total[r]);
      }
    }
    for (int r = 0; r < Rows; ++r)
      result[r * columns + (n - n_begin)] = _mm512_reduce_add_ps(total[r]);
  }
  store_row_block(p, result, Rows, m0, n_begin, columns);
}

template <int Bits, ScalarType Type>
void gemv_typed(const Problem& p, int n_begin, int n_end) {
  for_each_row_block(p.M, [&](auto rows, int m0) {
    gemv_rows<Bits, decltype(rows)::value, Type>(p, m0, n_begin, n_end);
  });
}

template <int Bits>
void gemv_bits(const Problem& p, int n_begin, int n_end) {
  switch (p.scale_type) {
    case ScalarType::float32:
      return gemv_typed<Bits, ScalarType::float32>(p, n_begin, n_end);
    case ScalarType::bfloat16:
      return gemv_typed<Bits, ScalarType::bfloat16>(p, n_begin, n_end);
    case ScalarType::float16:
      return gemv_typed<Bits, ScalarType::float16>(p, n_begin, n_end);
  }
}

}  // namespace

void avx512_vnni_gemv_int8(const Problem& p, int n_begin, int n_end) {
  if (p.bits == 4) {
    gemv_bits<4>(p, n_begin, n_end);
  } else {
    gemv_bits<8>(p, n_begin, n_end);
  }
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
