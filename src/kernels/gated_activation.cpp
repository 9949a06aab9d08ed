// gated_activation_fast: act(gate) * up in one pass, float32 inside, instead
// of three or more element-wise ops (each a pass over memory) stock.
#include "kernels/gpu/gated_activation.h"

#include <mlx/ops.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "kernels/eager.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "gated_activation_fast";
constexpr int kBlock = 1024;  // elements per load/compute/store step

void activate_blocks(const mx::array& gate, const mx::array& up, GatedActivation activation,
                     mx::array& out, Range blocks) {
  const VectorOps& ops = vector_ops();
  const int size = static_cast<int>(out.size());
  float gate_block[kBlock], up_block[kBlock], out_block[kBlock];
  auto apply = activation == GatedActivation::silu ? ops.silu_mul : ops.gelu_approx_mul;
  for (int b = blocks.begin; b < blocks.end; ++b) {
    const std::size_t offset = static_cast<std::size_t>(b) * kBlock;
    const int count = std::min(kBlock, size - b * kBlock);
    ops.load(gate.data<void>(), scalar_type_of(gate.dtype()), offset, count, gate_block);
    ops.load(up.data<void>(), scalar_type_of(up.dtype()), offset, count, up_block);
    apply(gate_block, up_block, out_block, count);
    ops.store(out_block, count, out.data<void>(), scalar_type_of(out.dtype()), offset);
  }
}

class GatedActivationFast : public FallbackPrimitive {
 public:
  GatedActivationFast(mx::Stream stream, Fallback fallback, GatedActivation activation)
      : FallbackPrimitive(stream, std::move(fallback)), activation_(activation) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [activation = activation_](const Arrays& in, Arrays& out) {
      eager::gated_activation(in[0], in[1], activation, out[0]);
    });
  }
  const char* name() const override { return "GatedActivationFast"; }
  bool is_equivalent(const mx::Primitive& other) const override {
    return activation_ == static_cast<const GatedActivationFast&>(other).activation_;
  }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  GatedActivation activation_;
};

// The stock composition, as mlx.nn.silu / mlx.nn.gelu_approx followed by
// `* up`, with scalars in the gate's dtype (Python's weak scalars).
mx::array stock_gated_activation(const mx::array& gate, const mx::array& up,
                                 GatedActivation activation, mx::StreamOrDevice s) {
  if (activation == GatedActivation::silu) {
    return mx::multiply(mx::multiply(gate, mx::sigmoid(gate, s), s), up, s);
  }
  auto scalar = [&](double value) { return mx::array(static_cast<float>(value), gate.dtype()); };
  auto cube = mx::power(gate, scalar(3.0), s);
  auto inner = mx::multiply(scalar(std::sqrt(2.0 / M_PI)),
                            mx::add(gate, mx::multiply(scalar(0.044715), cube, s), s), s);
  auto gelu = mx::multiply(mx::multiply(scalar(0.5), gate, s),
                           mx::add(scalar(1.0), mx::tanh(inner, s), s), s);
  return mx::multiply(gelu, up, s);
}

}  // namespace

mx::array gated_activation_fast(const mx::array& gate, const mx::array& up,
                                GatedActivation activation, mx::StreamOrDevice s) {
  if (!is_float_dtype(gate.dtype()) || !is_float_dtype(up.dtype())) {
    reject(kOp, "gate and up must be float32/bfloat16/float16");
  }
  if (gate.shape() != up.shape()) {
    std::ostringstream msg;
    msg << "gate has shape " << gate.shape() << " but up has " << up.shape();
    reject(kOp, msg.str());
  }
  auto fallback = [activation, s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{stock_gated_activation(in[0], in[1], activation, s)};
  };
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu)
    return gpu::gated_activation_covers(gate, up, stream)
               ? gpu::gated_activation(gate, up, activation, stream)
               : fallback({gate, up})[0];
  return mx::array(gate.shape(), mx::promote_types(gate.dtype(), up.dtype()),
                   std::make_shared<GatedActivationFast>(stream, fallback, activation), {gate, up});
}

void eager::gated_activation(const mx::array& gate, const mx::array& up, GatedActivation activation,
                             mx::array& out) {
  const int blocks = static_cast<int>((out.size() + kBlock - 1) / kBlock);
  parallel_ranges(blocks, 16, [&](Range r) { activate_blocks(gate, up, activation, out, r); });
}

}  // namespace mlx_cpp::kernels
