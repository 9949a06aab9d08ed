// expert_matvec.h on AVX2: eight output rows per vector
// (expert_matvec_body.inc).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/expert_matvec.h"
#include "kernels/simd_target.h"

MLX_CPP_TARGET_BEGIN("avx2,fma,f16c")

namespace mlx_cpp::kernels::expert_matvec {
namespace {

struct Lanes {
  using F = __m256;
  using I = __m256i;
  static constexpr int width = 8;

  // The code words of `count` rows `words` apart, one per lane.
  struct Rows {
    const int* base;
    I offsets, active;
    Rows(const uint32_t* first_row, int words, int count)
        : base(reinterpret_cast<const int*>(first_row)) {
      const I ids = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      offsets = _mm256_mullo_epi32(ids, _mm256_set1_epi32(words));
      active = _mm256_cmpgt_epi32(_mm256_set1_epi32(count), ids);
    }
    I gather(int word) const {
      return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), base,
                                         _mm256_add_epi32(offsets, _mm256_set1_epi32(word)), active,
                                         4);
    }
  };

  static F zero() { return _mm256_setzero_ps(); }
  static F broadcast(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F code_at(I codes, int shift, int mask) {
    return _mm256_cvtepi32_ps(
        _mm256_and_si256(_mm256_srli_epi32(codes, shift), _mm256_set1_epi32(mask)));
  }
  static F load_bits(const uint32_t* bits) {
    return _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const I*>(bits)));
  }
  static void store_bits(F v, uint32_t* bits) {
    _mm256_store_si256(reinterpret_cast<I*>(bits), _mm256_castps_si256(v));
  }
  // float → bfloat16 → float as MLX rounds: to nearest even, NaN canonical.
  static F round_bf16(F v) {
    I u = _mm256_castps_si256(v);
    const I lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
    u = _mm256_and_si256(u, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
    const F nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    return _mm256_blendv_ps(_mm256_castsi256_ps(u),
                            _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)), nan);
  }
};

inline float from_bf16(uint16_t bits) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits) << 16)));
}

#include "kernels/expert_matvec_body.inc"

}  // namespace

void rows_avx2(const Job& job, int first, int last) {
  rows_of_lanes(job, first, last);
}

}  // namespace mlx_cpp::kernels::expert_matvec

MLX_CPP_TARGET_END
#else
#include "kernels/expert_matvec.h"
namespace mlx_cpp::kernels::expert_matvec {
void rows_avx2(const Job& job, int first, int last) {
  rows_scalar(job, first, last);
}
}  // namespace mlx_cpp::kernels::expert_matvec
#endif
