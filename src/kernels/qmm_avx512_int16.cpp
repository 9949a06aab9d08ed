// Decode quantized matmul for 4-bit weights with 16-bit integer activations
// on AVX-512 VNNI. One vpdpwssd multiplies 32 pairs of signed 16-bit
// integers and adds each lane's two products into a 32-bit lane, as a
// single instruction on the vector ALU. The float kernels spend a
// conversion and an FMA per 16 weights, the bfloat16 kernel's vdpbf16ps
// issues at a quarter of the FMA's rate; both leave a core at ~16-19 G
// weights/s, below what its memory bandwidth delivers at 4 bits.
//
// x is rounded to int16 per block of group_size k (scale = max |x| /
// 32767), so a block's integer dot with the raw nibbles q is exact and is
// scaled once by (weight scale x activation scale); the bias term uses the
// float sums of the exact x. Rounding error per element is at most
// max|x in block| / 65534, below bfloat16's 2^-9 |x| for every element
// within a factor 128 of its block's largest; one outlier coarsens its
// block's small values to that step (2^-16 of the outlier), not to zero as
// 8-bit blocks do.
//
// x layout (Problem::x_i16): per 64 k, the 32 even k then the 32 odd k, so
// the low nibbles of 32 packed bytes meet the first half. Lane i of a
// chunk's dot covers k [4i, 4i + 4) of the chunk.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

constexpr int kChunkK = 64;
constexpr int kChunkBytes = 32;

// clang-format off
#include "kernels/qmm_avx512_factors.inc"
// clang-format on

// Floats per factor row, as per x scale row: one per group of the padded
// k, then at least 16 zeros so a chunk may load 16 from anywhere.
int factor_stride(const Problem& p) {
  return int16_scale_stride(p.k_padded, p.group_size);
}

// For weight row n and each x row r: factor[r][g] = scale[g] x the x
// group's scale, zero from the row's groups up to the next multiple of 16
// (a chunk past K reads one such zero), and the bias term
// sum_g bias[g] x_group_sums[r][g] in bias_term[r].
template <int Rows, ScalarType Type>
void load_row_factors(const Problem& p, int n, int m0, int stride, float* const* factor,
                      float* bias_term) {
  const int groups = p.K / p.group_size;
  const std::size_t first = static_cast<std::size_t>(n) * groups;
  __m512 bias_sum[Rows];
  for (int r = 0; r < Rows; ++r) bias_sum[r] = _mm512_setzero_ps();
  for (int g = 0; g < groups; g += 16) {
    const int count = groups - g;
    const __mmask16 mask = count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
    const __m512 s = load_masked<Type>(p.scales, first + g, mask);
    const __m512 b = load_masked<Type>(p.biases, first + g, mask);
    for (int r = 0; r < Rows; ++r) {
      const float* x_scale = p.x_i16_scales + static_cast<std::size_t>(m0 + r) * stride;
      const float* sums = p.x_group_sums + static_cast<std::size_t>(m0 + r) * groups;
      _mm512_storeu_ps(factor[r] + g, _mm512_mul_ps(s, _mm512_loadu_ps(x_scale + g)));
      bias_sum[r] = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask, sums + g), bias_sum[r]);
    }
  }
  for (int r = 0; r < Rows; ++r) bias_term[r] = _mm512_reduce_add_ps(bias_sum[r]);
}

// The integer dot of one chunk's 64 nibbles with 64 k of x (32 words each
// of low nibbles and high nibbles), accumulated into `acc`.
inline __m512i chunk_dot(__m512i low, __m512i high, __m512i x_even, __m512i x_odd, __m512i acc) {
  return _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(acc, low, x_even), high, x_odd);
}

// Rows [m0, m0 + Rows) x columns [n, n + Cols). Group is 32, 64 or 128:
// a 32-k group covers half a chunk's lanes, so its factor reaches them
// through a lane permutation; larger groups scale once per group.
template <int Rows, int Cols, int Group, ScalarType Type>
void gemv_block(const Problem& p, int m0, int n, int stride, float* factors, float* result,
                int columns, int n_begin) {
  const int groups = p.K / p.group_size;
  const std::size_t row_bytes = static_cast<std::size_t>(p.K) / 2;
  const __m512i nibble = _mm512_set1_epi16(0x000F);
  float* factor[Cols][Rows];
  float bias_term[Cols][Rows];
  const std::uint8_t* packed[Cols];
  for (int j = 0; j < Cols; ++j) {
    for (int r = 0; r < Rows; ++r) factor[j][r] = factors + (j * Rows + r) * stride;
    load_row_factors<Rows, Type>(p, n + j, m0, stride, factor[j], bias_term[j]);
    packed[j] = p.w + (n + j) * row_bytes;
  }
  prefetch_factor_rows(p, n + Cols, Cols, groups);
  const std::int16_t* x[Rows];
  for (int r = 0; r < Rows; ++r) x[r] = p.x_i16 + static_cast<std::size_t>(m0 + r) * p.k_padded;
  __m512 total[Rows][Cols];
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) total[r][j] = _mm512_setzero_ps();
  }
  // The 32 words of low and high nibbles of column j's chunk c.
  auto load_weights = [&](int j, int c, __m512i& low, __m512i& high) {
    const int bytes = static_cast<int>(row_bytes) - c * kChunkBytes;
    const __mmask32 mask = bytes >= kChunkBytes ? ~__mmask32{0} : (__mmask32{1} << bytes) - 1;
    // The rows the next block reads, at the same offset, one cache line
    // per two chunks.
    if ((c & 1) == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(packed[j] + c * kChunkBytes + Cols * row_bytes),
                   _MM_HINT_T0);
    }
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, packed[j] + c * kChunkBytes));
    low = _mm512_and_si512(w, nibble);
    high = _mm512_srli_epi16(w, 4);
  };
  if constexpr (Group == 32) {
    const int chunks = p.k_padded / kChunkK;
    // Lanes 0-7 take the chunk's first group, lanes 8-15 its second.
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int c = 0; c < chunks; ++c) {
      __m512i x_even[Rows], x_odd[Rows];
      for (int r = 0; r < Rows; ++r) {
        x_even[r] = _mm512_loadu_si512(x[r] + c * kChunkK);
        x_odd[r] = _mm512_loadu_si512(x[r] + c * kChunkK + 32);
      }
      for (int j = 0; j < Cols; ++j) {
        __m512i low, high;
        load_weights(j, c, low, high);
        for (int r = 0; r < Rows; ++r) {
          const __m512i dot = chunk_dot(low, high, x_even[r], x_odd[r], _mm512_setzero_si512());
          const __m512 lane_factor = _mm512_permutexvar_ps(halves, _mm512_loadu_ps(factor[j][r] + 2 * c));
          total[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), lane_factor, total[r][j]);
        }
      }
    }
  } else {
    constexpr int kChunksPerGroup = Group / kChunkK;
    for (int g = 0; g < groups; ++g) {
      __m512i dot[Rows][Cols];
      for (int r = 0; r < Rows; ++r) {
        for (int j = 0; j < Cols; ++j) dot[r][j] = _mm512_setzero_si512();
      }
      for (int i = 0; i < kChunksPerGroup; ++i) {
        const int c = g * kChunksPerGroup + i;
        __m512i x_even[Rows], x_odd[Rows];
        for (int r = 0; r < Rows; ++r) {
          x_even[r] = _mm512_loadu_si512(x[r] + c * kChunkK);
          x_odd[r] = _mm512_loadu_si512(x[r] + c * kChunkK + 32);
        }
        for (int j = 0; j < Cols; ++j) {
          __m512i low, high;
          load_weights(j, c, low, high);
          for (int r = 0; r < Rows; ++r) dot[r][j] = chunk_dot(low, high, x_even[r], x_odd[r], dot[r][j]);
        }
      }
      for (int j = 0; j < Cols; ++j) {
        for (int r = 0; r < Rows; ++r) {
          total[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][j]), _mm512_set1_ps(factor[j][r][g]),
                                        total[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Cols; ++j) {
      result[r * columns + (n + j - n_begin)] = _mm512_reduce_add_ps(total[r][j]) + bias_term[j][r];
    }
  }
}

template <int Rows, int Group, ScalarType Type>
void gemv_rows(const Problem& p, int m0, int n_begin, int n_end) {
  const int columns = n_end - n_begin;
  const int stride = factor_stride(p);
  float* factors = thread_scratch(0, static_cast<std::size_t>(gemv_columns(Rows)) * Rows * stride);
  float* result = thread_scratch(1, static_cast<std::size_t>(Rows) * columns);
  for_each_column_block<Rows>(n_begin, n_end, [&](auto cols, int n) {
    gemv_block<Rows, decltype(cols)::value, Group, Type>(p, m0, n, stride, factors, result, columns,
                                                         n_begin);
  });
  for (int r = 0; r < Rows; ++r) {
    std::size_t offset = static_cast<std::size_t>(m0 + r) * p.N + n_begin;
    store_from_float(result + r * columns, columns, p.out, p.out_type, offset);
  }
}

template <int Group, ScalarType Type>
void gemv_group(const Problem& p, int n_begin, int n_end) {
  for_each_row_block(p.M, [&](auto rows, int m0) {
    gemv_rows<decltype(rows)::value, Group, Type>(p, m0, n_begin, n_end);
  });
}

template <int Group>
void gemv_scale_type(const Problem& p, int n_begin, int n_end) {
  switch (p.scale_type) {
    case ScalarType::float16:
      return gemv_group<Group, ScalarType::float16>(p, n_begin, n_end);
    case ScalarType::bfloat16:
      return gemv_group<Group, ScalarType::bfloat16>(p, n_begin, n_end);
    case ScalarType::float32:
      return gemv_group<Group, ScalarType::float32>(p, n_begin, n_end);
  }
}

}  // namespace

void avx512_vnni_gemv_int16_q4(const Problem& p, int n_begin, int n_end) {
  switch (p.group_size) {
    case 32:
      return gemv_scale_type<32>(p, n_begin, n_end);
    case 64:
      return gemv_scale_type<64>(p, n_begin, n_end);
    default:
      return gemv_scale_type<128>(p, n_begin, n_end);
  }
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#endif
