// expert_matvec.h on AVX-512: sixteen output rows per vector
// (expert_matvec_body.inc).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/expert_matvec.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels::expert_matvec {
namespace {

struct Lanes {
  using F = __m512;
  using I = __m512i;
  static constexpr int width = 16;

  // The code words of `count` rows `words` apart, one per lane.
  struct Rows {
    const uint32_t* base;
    I offsets;
    __mmask16 active;
    Rows(const uint32_t* first_row, int words, int count)
        : base(first_row), active(static_cast<__mmask16>((1u << count) - 1u)) {
      offsets = _mm512_mullo_epi32(
          _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
          _mm512_set1_epi32(words));
    }
    I gather(int word) const {
      return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), active,
                                         _mm512_add_epi32(offsets, _mm512_set1_epi32(word)), base,
                                         4);
    }
  };

  static F zero() { return _mm512_setzero_ps(); }
  static F broadcast(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F code_at(I codes, int shift, int mask) {
    return _mm512_cvtepi32_ps(
        _mm512_and_si512(_mm512_srli_epi32(codes, shift), _mm512_set1_epi32(mask)));
  }
  static F load_bits(const uint32_t* bits) { return _mm512_castsi512_ps(_mm512_load_si512(bits)); }
  static void store_bits(F v, uint32_t* bits) { _mm512_store_si512(bits, _mm512_castps_si512(v)); }
  // float → bfloat16 → float as MLX rounds: to nearest even, NaN canonical.
  static F round_bf16(F v) {
    I u = _mm512_castps_si512(v);
    const I lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    u = _mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(u, nan, _mm512_set1_epi32(0x7FC00000)));
  }
};

inline float from_bf16(uint16_t bits) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits) << 16)));
}

#include "kernels/expert_matvec_body.inc"

}  // namespace

void rows_avx512(const Job& job, int first, int last) {
  rows_of_lanes(job, first, last);
}

}  // namespace mlx_cpp::kernels::expert_matvec

MLX_CPP_TARGET_END
#else
#include "kernels/expert_matvec.h"
namespace mlx_cpp::kernels::expert_matvec {
void rows_avx512(const Job& job, int first, int last) {
  rows_scalar(job, first, last);
}
}  // namespace mlx_cpp::kernels::expert_matvec
#endif
