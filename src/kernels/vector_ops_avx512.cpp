// VectorOps for AVX512 (see vector_ops_body.inc).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/simd_target.h"
#include "kernels/vector_ops.h"

// GCC 12's AVX-512 intrinsics initialise vectors from themselves, which
// -Wmaybe-uninitialized reports as a false positive once inlined.
MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels {
namespace avx512 {
namespace {

constexpr const char* kIsaName = "avx512";

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/vector_ops_body.inc"
// clang-format on

}  // namespace
}  // namespace avx512

const VectorOps& avx512_vector_ops() {
  return avx512::kOps;
}

}  // namespace mlx_cpp::kernels

MLX_CPP_TARGET_END

#else  // not x86: the portable table stands in

#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {
const VectorOps& avx512_vector_ops() {
  return scalar_vector_ops();
}
}  // namespace mlx_cpp::kernels

#endif
