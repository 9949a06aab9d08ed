// Decode quantized matmul for 8-bit weights with 16-bit integer activations
// on AVX-512 VNNI: the body of qmm_avx512_int16.cpp, each chunk's 64 bytes
// split into the words of even and odd k by a mask and a shift. The float
// gemv converts every weight to float32 (two instructions per 16 weights);
// here two vpdpwssd take 64.
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

constexpr int kBits = 8;

// clang-format off
#include "kernels/qmm_avx512_int16_body.inc"
// clang-format on

}  // namespace

void avx512_vnni_gemv_int16_q8(const Problem& p, int n_begin, int n_end) {
  gemv_int16(p, n_begin, n_end);
}

}  // namespace mlx_cpp::kernels::qmm

#pragma GCC pop_options

#endif
