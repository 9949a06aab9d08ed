#include "model/mlp.h"

#include <mlx/ops.h>

#include <stdexcept>

#include "kernels/kernels.h"
#include "model/activations.h"

namespace mlx_cpp {
namespace mx = mlx::core;

mx::array Mlp::activate(const mx::array& x) const {
  switch (activation) {
    case MlpActivation::silu:
      return silu(x);
    case MlpActivation::gelu_approx:
      return gelu_approx(x);
    case MlpActivation::gelu:
      return gelu(x);
    case MlpActivation::relu_squared:
      return relu_squared(x);
    case MlpActivation::xielu:
      return mlx_cpp::xielu(x, xielu->alpha_p, xielu->alpha_n, xielu->beta, xielu->eps);
  }
  throw std::logic_error("unknown MLP activation");
}

mx::array Mlp::operator()(const mx::array& x, const RowAdapters& adapters) const {
  if (!gate_proj) return down_proj(activate(up_proj(x, adapters)), adapters);
  auto gate_up = Linear::apply_all(x, {&*gate_proj, &up_proj}, adapters);
  const auto &gate = gate_up[0], &up = gate_up[1];
  const bool has_kernel =
      activation == MlpActivation::silu || activation == MlpActivation::gelu_approx;
  if (kernels == KernelMode::fast && has_kernel) {
    auto kind = activation == MlpActivation::gelu_approx ? kernels::GatedActivation::gelu_approx
                                                         : kernels::GatedActivation::silu;
    return down_proj(kernels::gated_activation_fast(gate, up, kind), adapters);
  }
  // swiglu is one compiled function in mlx-lm; the others multiply after.
  if (activation == MlpActivation::silu) return down_proj(swiglu(gate, up), adapters);
  return down_proj(mx::multiply(activate(gate), up), adapters);
}

}  // namespace mlx_cpp
