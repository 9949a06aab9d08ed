// Decode quantized matmul for 4- and 8-bit weights with 16-bit integer
// activations on AVX-512 VNNI (6-bit weights, which also need VBMI:
// qmm_avx512_int16_q6.cpp, the same body). One vpdpwssd multiplies 32
// pairs of signed 16-bit integers and adds each lane's two products into a
// 32-bit lane, as a single instruction on the vector ALU. The float
// kernels spend a conversion and an FMA per 16 weights (8-bit ones too),
// the bfloat16 kernel's vdpbf16ps issues at a quarter of the FMA's rate;
// both leave a core at ~16-19 G weights/s, below what its memory bandwidth
// delivers at 4 bits.
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
// the low nibbles of 32 packed bytes meet the first half (6-bit weights are
// unpacked into the same order). Lane i of a chunk's dot covers
// k [4i, 4i + 4) of the chunk.
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

// The body once per weight width, each in its own namespace.
namespace {
namespace four_bit {
constexpr int kBits = 4;
// clang-format off
#include "kernels/qmm_avx512_int16_body.inc"
// clang-format on
}  // namespace four_bit

namespace eight_bit {
constexpr int kBits = 8;
// clang-format off
#include "kernels/qmm_avx512_int16_body.inc"
// clang-format on
}  // namespace eight_bit
}  // namespace

void avx512_vnni_gemv_int16_q4(const Problem& p, int n_begin, int n_end) {
  four_bit::gemv_int16(p, n_begin, n_end);
}

void avx512_vnni_gemv_int16_q8(const Problem& p, int n_begin, int n_end) {
  eight_bit::gemv_int16(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#endif
