#pragma once
// The GPU's own quantized matrix-vector kernel: x @ dequantize(w)^T for
// decode-shaped calls (at most kMaxRows rows of x, or x [B, 1, K]: one token
// of each of B sequences, in blocks of kMaxRows rows) on MLX's affine 4- and
// 8-bit layout, as mlx::core::quantized_matmul(x, w, scales, biases,
// /*transpose=*/true, group_size, bits, "affine") computes it.
//
// One warp per output column streams that column's packed weights in
// 16-byte loads (32 codes at 4 bits), each lane over every 32nd chunk, and
// reuses every load for all rows of x; float32 accumulation, a fixed lane
// order and a fixed shuffle tree, so each row's result is the same bits
// whatever the other rows are (batch invariance) and within float32
// rounding of the exact product (tests/kernels/gpu_quantized_matvec_test).
//
// It runs through MLX's custom-kernel primitive (mlx::core::fast::
// cuda_kernel): MLX compiles the source with NVRTC for the GPU it finds, at
// the first call of each shape, and caches it (MLX_PTX_CACHE_DIR keeps the
// compiled kernels on disk). The same objects serve the CPU build, which
// never calls it.
#include <mlx/array.h>
#include <mlx/stream.h>

#include <vector>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels::gpu {

inline constexpr int kMaxRows = 8;
// Matrices one launch computes: projections of one x (queries, keys and
// values) go in one launch, since a decode step on the GPU is bound by the
// number of launches more than by their bytes.
inline constexpr int kMaxMatrices = 3;

// Whether the kernel takes this call: a GPU stream, 4 or 8 bits, group 32,
// 64 or 128 (so K is a multiple of 32), x of at most kMaxRows rows of K or
// [B, 1, K], float x, scales and biases.
bool quantized_matvec_covers(const mlx::core::array& x, const mlx::core::array& w,
                             const mlx::core::array& scales, int group_size, int bits,
                             const mlx::core::Stream& stream);

// [..., N] in promote_types(x.dtype(), scales.dtype()). Call only where
// quantized_matvec_covers holds.
mlx::core::array quantized_matvec(const mlx::core::array& x, const mlx::core::array& w,
                                  const mlx::core::array& scales, const mlx::core::array& biases,
                                  int group_size, int bits, const mlx::core::Stream& stream);

// x @ dequantize(w_i)^T for each of several matrices (MLX's layout, one
// format: the width, group size and factor dtype of the first) in
// ceil(count / kMaxMatrices) launches; each output is the bits
// quantized_matvec gives for that matrix alone. Call only where
// quantized_matvec_covers holds for every matrix.
std::vector<mlx::core::array> quantized_matvecs(const mlx::core::array& x,
                                                const std::vector<QuantizedWeights>& weights,
                                                int group_size, int bits,
                                                const mlx::core::Stream& stream);

}  // namespace mlx_cpp::kernels::gpu
