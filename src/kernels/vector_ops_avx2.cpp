// VectorOps for AVX2 (see vector_ops_body.inc).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/simd_target.h"
#include "kernels/vector_ops.h"

MLX_CPP_TARGET_BEGIN("avx2,fma,f16c")

namespace mlx_cpp::kernels {
namespace avx2 {
namespace {

constexpr const char* kIsaName = "avx2";

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx2.inc"
#include "kernels/vector_ops_body.inc"
// clang-format on

}  // namespace
}  // namespace avx2

const VectorOps& avx2_vector_ops() {
  return avx2::kOps;
}

}  // namespace mlx_cpp::kernels

MLX_CPP_TARGET_END

#else  // not x86: the portable table stands in

#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {
const VectorOps& avx2_vector_ops() {
  return scalar_vector_ops();
}
}  // namespace mlx_cpp::kernels

#endif
