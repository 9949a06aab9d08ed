// AVX2 + FMA quantized matmul: 8 floats per vector, 6 x 16 micro-kernel
// (12 accumulators + 2 panel vectors + 1 broadcast of the 16 ymm registers).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_TARGET_BEGIN("avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx2 {
namespace {

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx2.inc"
#include "kernels/qmm_simd_body.inc"
#include "kernels/qmm_avx2_rows_unit.inc"
// clang-format on

// pack_panel for row-interleaved weights: a panel's 16 columns are one
// block of 16 rows, so each unit (16 rows x 4 k) becomes four vectors of
// 8 rows per k, dequantized with 8 rows' scales and biases at once and
// stored whole. The values and their rounding are pack_panel's (q * scale
// + bias in one FMA), and 4-bit panels keep x's k order (per 16 k, the even
// k then the odd k), so the micro-kernel's sums, and the results, are those
// of the same weights in MLX's layout.
template <int Bits, ScalarType Type>
void pack_row_panel(const Problem& p, int n0, int k0, int depth, float* panel) {
  static_assert(kPanelColumns == 16, "a panel is one block of 16 interleaved rows");
  constexpr int kUnitBytes = kRowUnitBytes<Bits>;
  const int groups = p.K / p.group_size;
  const std::size_t block = static_cast<std::size_t>(n0 / 16);
  const std::uint8_t* unit = p.w + (block * (p.K / 4) + k0 / 4) * kUnitBytes;
  const std::size_t factors = block * groups * 16;
  const __m256i low_word = _mm256_set1_epi32(0xFFFF);
  // k0 starts a group (the panel depth is a multiple of every group size),
  // so the first unit loads the factors.
  __m256 scale[2] = {Vec::zero(), Vec::zero()}, bias[2] = {Vec::zero(), Vec::zero()};
  for (int k = 0; k < depth; k += 4, unit += kUnitBytes) {
    if ((k0 + k) % p.group_size == 0) {
      const std::size_t at = factors + static_cast<std::size_t>((k0 + k) / p.group_size) * 16;
      for (int half = 0; half < 2; ++half) {
        scale[half] = load_row_factors<Type>(p.scales, at + 8 * half);
        bias[half] = load_row_factors<Type>(p.biases, at + 8 * half);
      }
    }
    __m256i pairs[4];
    unpack_row_unit<Bits>(unit, pairs);
    for (int i = 0; i < 4; ++i) {
      // Where k + i sits in x's order.
      const int kk = k + i;
      const int at = Bits == 4 ? kk / 16 * 16 + kk % 2 * 8 + kk % 16 / 2 : kk;
      for (int half = 0; half < 2; ++half) {
        const __m256i pair = pairs[i / 2 * 2 + half];
        const __m256i q =
            i % 2 == 0 ? _mm256_and_si256(pair, low_word) : _mm256_srli_epi32(pair, 16);
        Vec::store(panel + at * kPanelColumns + 8 * half,
                   Vec::fmadd(_mm256_cvtepi32_ps(q), scale[half], bias[half]));
      }
    }
  }
}

template <int Bits>
void gemm_rows_bits(const Problem& p, int n_begin, int n_end) {
  switch (p.scale_type) {
    case ScalarType::float16:
      return gemm_panels(p, n_begin, n_end, pack_row_panel<Bits, ScalarType::float16>);
    case ScalarType::bfloat16:
      return gemm_panels(p, n_begin, n_end, pack_row_panel<Bits, ScalarType::bfloat16>);
    case ScalarType::float32:
      return gemm_panels(p, n_begin, n_end, pack_row_panel<Bits, ScalarType::float32>);
  }
}

void gemm_rows(const Problem& p, int n_begin, int n_end) {
  if (p.bits == 4) return gemm_rows_bits<4>(p, n_begin, n_end);
  if (p.bits == 6) return gemm_rows_bits<6>(p, n_begin, n_end);
  gemm_rows_bits<8>(p, n_begin, n_end);
}

}  // namespace
}  // namespace avx2

const IsaKernels& avx2_kernels() {
  static const IsaKernels kernels = [] {
    IsaKernels table{"avx2", avx2::L, avx2::kPanelColumns, avx2::gemv, avx2::gemm};
    table.gemv_int16_q4 = avx2_gemv_int16_q4;
    table.gemv_int16_q6 = avx2_gemv_int16_q6;
    table.gemv_int16_q8 = avx2_gemv_int16_q8;
    table.gemv_int16_rows = avx2_gemv_int16_rows;
    table.gemm_rows = avx2::gemm_rows;
    return table;
  }();
  return kernels;
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#else  // not x86: the portable table stands in

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {
const IsaKernels& avx2_kernels() {
  return scalar_kernels();
}
}  // namespace mlx_cpp::kernels::qmm

#endif
