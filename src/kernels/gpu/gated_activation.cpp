#include "kernels/gpu/gated_activation.h"

#include <mlx/fast.h>

#include "kernels/primitive_base.h"

namespace mlx_cpp::kernels::gpu {
namespace mx = mlx::core;

namespace {

// One element per thread, one grid row per row of the inputs (MLX writes
// the signature: const G* gate, const U* up, O* out, then the constants
// WIDTH (the last dimension: fixed per model, so the number of rows never
// asks for another compile), GELU and the types G, U, O).
constexpr const char* kSource = R"(
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  if (column >= WIDTH) return;
  const size_t i = static_cast<size_t>(blockIdx.y) * WIDTH + column;
  const float g = static_cast<float>(gate[i]);
  float activated;
  if (GELU) {
    const float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    activated = 0.5f * g * (1.0f + tanhf(inner));
  } else {
    activated = g / (1.0f + expf(-g));
  }
  out[i] = static_cast<O>(activated * static_cast<float>(up[i]));
)";

constexpr int kThreadsPerBlock = 256;

const mx::fast::CustomKernelFunction& kernel() {
  static const auto function =
      mx::fast::cuda_kernel("mlx_cpp_gated_activation", {"gate", "up"}, {"out"}, kSource,
                            /*header=*/"", /*ensure_row_contiguous=*/true);
  return function;
}

}  // namespace

bool gated_activation_covers(const mx::array& gate, const mx::array& up, const mx::Stream& stream) {
  return stream.device == mx::Device::gpu && is_float_dtype(gate.dtype()) &&
         is_float_dtype(up.dtype()) && gate.shape() == up.shape() && gate.ndim() >= 1 &&
         gate.size() > 0 && gate.size() / gate.shape(-1) <= 65535;  // grid rows
}

mx::array gated_activation(const mx::array& gate, const mx::array& up, GatedActivation activation,
                           const mx::Stream& stream) {
  const auto out_dtype = mx::promote_types(gate.dtype(), up.dtype());
  const int width = gate.shape(-1), rows = static_cast<int>(gate.size() / width);
  const std::vector<std::pair<std::string, mx::fast::TemplateArg>> constants{
      {"WIDTH", width},
      {"GELU", activation == GatedActivation::gelu_approx},
      {"G", gate.dtype()},
      {"U", up.dtype()},
      {"O", out_dtype}};
  return kernel()({gate, up}, {gate.shape()}, {out_dtype}, {width, rows, 1},
                  {kThreadsPerBlock, 1, 1}, constants, std::nullopt, false, stream)[0];
}

}  // namespace mlx_cpp::kernels::gpu
