#pragma once
// MLP activations and the gemma residual, compiled with mx::compile
// exactly as mlx-lm compiles them (shapeless), so the fused CPU kernels and
// therefore every rounding step match the reference.
#include <mlx/array.h>

namespace mlx_cpp {

// silu(gate) * up, silu(x) = x * sigmoid(x)
mlx::core::array swiglu(const mlx::core::array& gate, const mlx::core::array& up);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
mlx::core::array gelu_approx(const mlx::core::array& x);
// gelu_approx(gate) * x (Gemma 4's experts)
mlx::core::array geglu(const mlx::core::array& gate, const mlx::core::array& x);
// x (1 + erf(x / sqrt(2))) / 2, mlx.nn.gelu
mlx::core::array gelu(const mlx::core::array& x);
// x * sigmoid(x), mlx.nn.silu
mlx::core::array silu(const mlx::core::array& x);
// relu(x)^2, nemotron
mlx::core::array relu_squared(const mlx::core::array& x);
// XieLU with its learned scalars (mlx-lm's activations.xielu, apertus).
mlx::core::array xielu(const mlx::core::array& x, const mlx::core::array& alpha_p,
                       const mlx::core::array& alpha_n, const mlx::core::array& beta,
                       const mlx::core::array& eps);
// The gated delta rule's decay per value head, float32:
// exp(-exp(A_log) * softplus(a + dt_bias)) (mlx-lm's compute_g).
mlx::core::array delta_decay(const mlx::core::array& a_log, const mlx::core::array& a,
                             const mlx::core::array& dt_bias);
// silu(gate) * x computed in float32, returned in h's dtype (qwen3_5's
// gated norm; mlx-lm's precise_swiglu).
mlx::core::array precise_swiglu(const mlx::core::array& h, const mlx::core::array& gate,
                                const mlx::core::array& x);
// tanh(x / cap) * cap in x's dtype (gemma 2's logits, Gemma 4's).
mlx::core::array softcap(const mlx::core::array& x, float cap);
// x + y; for float16, added in float32 and clipped to the float16 range.
mlx::core::array clip_residual(const mlx::core::array& x, const mlx::core::array& y);

}  // namespace mlx_cpp
