#pragma once
// The GPU's own gated activation: act(gate) * up in one launch, float32
// inside, as the CPU's gated_activation_fast computes it. Stock MLX takes
// three launches for silu (sigmoid, two products) and more for the tanh
// approximation of gelu; a decode step on the GPU is bound by its launches.
//
// Through MLX's custom-kernel primitive (see quantized_matvec.h).
#include <mlx/array.h>
#include <mlx/stream.h>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels::gpu {

// Whether the kernel takes this call: a GPU stream, float gate and up of one
// shape.
bool gated_activation_covers(const mlx::core::array& gate, const mlx::core::array& up,
                             const mlx::core::Stream& stream);

// act(gate) * up in promote_types(gate, up): silu(g) = g / (1 + e^-g);
// gelu_approx(g) = g / 2 (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))). Call
// only where gated_activation_covers holds.
mlx::core::array gated_activation(const mlx::core::array& gate, const mlx::core::array& up,
                                  GatedActivation activation, const mlx::core::Stream& stream);

}  // namespace mlx_cpp::kernels::gpu
