// Decode quantized matmul for 6-bit weights with 16-bit integer activations
// on AVX-512 VNNI and VBMI: the body of qmm_avx512_int16.cpp, with each
// chunk's 48 bytes unpacked by byte permutes and vpmultishiftqb (VBMI). The
// float gemv unpacks 6-bit values at ~10 G weights/s per core, under what
// memory delivers; this kernel needs about a third of its instructions.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {

namespace {

constexpr int kBits = 6;

// clang-format off
#include "kernels/qmm_avx512_int16_body.inc"
// clang-format on

}  // namespace

void avx512_vbmi_gemv_int16_q6(const Problem& p, int n_begin, int n_end) {
  gemv_int16(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
