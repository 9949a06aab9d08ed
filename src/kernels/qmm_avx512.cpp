// AVX-512 quantized matmul: 16 floats per vector, 8 x 32 micro-kernel
// (16 accumulators of the 32 zmm registers).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "kernels/cpu_features.h"
#include "kernels/qmm_kernels.h"
#include "kernels/simd_target.h"

// GCC 12's AVX-512 intrinsics initialise vectors from themselves
// (_mm512_undefined_*), which -Wmaybe-uninitialized reports as a false
// positive once inlined; silenced for this file only.
MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#pragma GCC diagnostic ignored "-Wuninitialized"
MLX_CPP_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace mlx_cpp::kernels::qmm {
namespace avx512 {
namespace {

// The traits must come before the body that uses them.
// clang-format off
#include "kernels/simd_avx512.inc"
#include "kernels/qmm_simd_body.inc"
// clang-format on

}  // namespace
}  // namespace avx512

namespace {

// The table for one set of extensions (bit i: Extension i active).
IsaKernels table_for(unsigned extensions) {
  auto has = [extensions](Extension e) { return (extensions >> static_cast<int>(e)) & 1u; };
  IsaKernels table{"avx512", avx512::L, avx512::kPanelColumns, avx512::gemv, avx512::gemm};
  if (has(Extension::vnni)) {
    table.gemv_int8 = avx512_vnni_gemv_int8;
    table.int8_interleave = 64;
    table.int8_k_align = 128;
    table.gemv_int16_q4 = avx512_vnni_gemv_int16_q4;
    table.gemv_int16_q8 = avx512_vnni_gemv_int16_q8;
    table.gemv_int16_rows = avx512_vnni_gemv_int16_rows;
    if (has(Extension::vbmi)) table.gemv_int16_q6 = avx512_vbmi_gemv_int16_q6;
  }
  if (has(Extension::bf16)) {
    table.gemv_bf16_q4 = avx512_bf16_gemv_q4;
    table.gemm_half = avx512_bf16_gemm;
    table.prepare_x_half = prepare_x_bfloat16;
    table.half_name = "bfloat16";
  }
#if MLX_CPP_AVX512_FP16_KERNELS
  // float16 products are the more precise where both exist.
  if (has(Extension::fp16)) {
    table.gemm_half = avx512_fp16_gemm;
    table.prepare_x_half = prepare_x_float16;
    table.half_name = "float16";
  }
#endif
  return table;
}

constexpr Extension kExtensions[] = {Extension::vnni, Extension::vbmi, Extension::bf16,
                                     Extension::fp16};

}  // namespace

const IsaKernels& avx512_kernels() {
  // One table per combination, built once: a limit set by a test or a
  // benchmark switches between them.
  static const auto tables = [] {
    std::array<IsaKernels, 1u << std::size(kExtensions)> all{};
    for (unsigned mask = 0; mask < all.size(); ++mask) all[mask] = table_for(mask);
    return all;
  }();
  unsigned mask = 0;
  for (Extension e : kExtensions) {
    if (extension_active(e)) mask |= 1u << static_cast<int>(e);
  }
  return tables[mask];
}

}  // namespace mlx_cpp::kernels::qmm

MLX_CPP_TARGET_END

#else  // not x86: the portable table stands in

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {
const IsaKernels& avx512_kernels() {
  return scalar_kernels();
}
}  // namespace mlx_cpp::kernels::qmm

#endif
