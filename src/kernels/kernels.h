#pragma once
// mlx-cpp's own CPU kernels as MLX ops. Each op computes the same math as a
// stock MLX op (named per function) up to float rounding, validates its
// inputs here (std::invalid_argument naming the op and the values: kernels
// sit below io/ and do not use mlx_cpp::Error), and evaluates through an MLX
// primitive whose CPU implementation is multi-threaded and SIMD (AVX2 or
// AVX-512, picked at run time; a portable scalar path otherwise). On a
// non-CPU stream the op returns its stock-op fallback. The caller decides
// per call site whether to use these or the stock ops.
#include <mlx/array.h>
#include <mlx/utils.h>

namespace mlx_cpp::kernels {

// x @ dequantize(w)^T, as mlx::core::quantized_matmul(x, w, scales, biases,
// /*transpose=*/true, group_size, bits, "affine").
//   x:       [..., K] float32 / bfloat16 / float16
//   w:       [N, K * bits / 32] uint32, MLX affine packing (LSB first)
//   scales, biases: [N, K / group_size], float32 / bfloat16 / float16 (same)
//   bits 4 or 8, group_size 32, 64 or 128.
// Returns [..., N] in promote_types(x.dtype(), scales.dtype()).
// Accumulates in float32; differences from the stock op are summation order
// only (tests/kernels state the measured bounds).
mlx::core::array quantized_matmul_fast(const mlx::core::array& x, const mlx::core::array& w,
                                       const mlx::core::array& scales,
                                       const mlx::core::array& biases, int group_size, int bits,
                                       mlx::core::StreamOrDevice s = {});

// Threads the kernels use, including MLX's evaluating thread. count < 1
// means the hardware's core count (the default).
void set_kernel_threads(int count);
int kernel_threads();

}  // namespace mlx_cpp::kernels
