#pragma once
// Compiles a region of a kernel file for instruction-set extensions while
// the rest of the binary stays baseline x86-64 (the kernels pick their
// code at run time, cpu_features.h). GCC takes `#pragma GCC target` over
// the region; clang ignores that pragma and takes `#pragma clang
// attribute`, which gives every function declared in the region the
// target attribute. Both build the kernels, so that clang's sanitizers
// and fuzzers reach them too.
//
//   MLX_CPP_TARGET_BEGIN("avx2,fma,f16c")
//   ... functions using AVX2 intrinsics ...
//   MLX_CPP_TARGET_END

#define MLX_CPP_PRAGMA(text) _Pragma(#text)

// GCC reports the AVX-512 intrinsics' undefined vectors
// (_mm512_undefined_*) as maybe uninitialized, a false positive; clang
// neither reports it nor knows the warning.
#if defined(__clang__)
#define MLX_CPP_IGNORE_MAYBE_UNINITIALIZED
#else
#define MLX_CPP_IGNORE_MAYBE_UNINITIALIZED \
  MLX_CPP_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized")
#endif

#if defined(__clang__)
#define MLX_CPP_TARGET_BEGIN(features) \
  MLX_CPP_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define MLX_CPP_TARGET_END MLX_CPP_PRAGMA(clang attribute pop)
#else
#define MLX_CPP_TARGET_BEGIN(features) \
  MLX_CPP_PRAGMA(GCC push_options) MLX_CPP_PRAGMA(GCC target(features))
#define MLX_CPP_TARGET_END MLX_CPP_PRAGMA(GCC pop_options)
#endif

// clang before 15 declares the AVX512-FP16 intrinsics only in files built
// for them as a whole (-mavx512fp16), which would let their inline code
// leak into the rest of the binary; such builds leave the float16 kernels
// out, and the detected level stops at avx512-bf16.
#if defined(__clang__) && __clang_major__ < 15
#define MLX_CPP_AVX512_FP16_KERNELS 0
#else
#define MLX_CPP_AVX512_FP16_KERNELS 1
#endif
