#include "model/switch_glu.h"

#include <mlx/device.h>
#include <mlx/ops.h>

#include <stdexcept>

#include "kernels/kernels.h"
#include "model/activations.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

SwitchLinear SwitchLinear::load(WeightStore& weights, const QuantizationConfig& quantization,
                                const std::string& path, int experts, int in_dims, int out_dims,
                                bool has_bias, KernelMode kernels) {
  SwitchLinear layer;
  layer.kernels_ = kernels;
  layer.experts_ = experts;
  layer.in_dims_ = in_dims;
  layer.out_dims_ = out_dims;
  layer.quantized_ = load_quantized(weights, quantization, path, in_dims, out_dims, {experts});
  if (!layer.quantized_) {
    layer.dense_ = weights.take(path + ".weight", mx::Shape{experts, out_dims, in_dims});
    // Said at load rather than at the first forward, where MLX would stop
    // with "[GatherMM::eval] Currently only supports float32".
    if (layer.dense_->ndim() == 3 && layer.dense_->dtype() != mx::float32 &&
        mx::default_device() == mx::Device::cpu)
      weights.report(path + ".weight is " + dtype_name(layer.dense_->dtype()) +
                     ": dense experts need float32 on the CPU (MLX's gather_mm multiplies "
                     "float32 only); quantize the experts or store them as float32");
  }
  if (has_bias) layer.bias_ = weights.take(path + ".bias", mx::Shape{experts, out_dims});
  return layer;
}

mx::array SwitchLinear::operator()(const mx::array& x, const mx::array& indices,
                                   bool sorted_indices, const RowAdapters& adapters) const {
  // One row per index (a decode step, indices unsorted): the own kernel,
  // which gives gather_qmm's bits.
  const bool own = quantized_ && kernels_ == KernelMode::fast && !sorted_indices &&
                   quantized_->params.mode == "affine";
  auto y =
      own ? kernels::gather_quantized_matvec_fast(
                x, quantized_->packed, quantized_->scales, quantized_->biases, indices,
                quantized_->params.group_size, quantized_->params.bits)
      : quantized_
          ? mx::gather_qmm(x, quantized_->packed, quantized_->scales, quantized_->biases,
                           std::nullopt, indices, /*transpose=*/true, quantized_->params.group_size,
                           quantized_->params.bits, quantized_->params.mode, std::nullopt,
                           sorted_indices)
          : mx::gather_mm(x, mx::swapaxes(*dense_, -1, -2), std::nullopt, indices, sorted_indices);
  if (bias_) y = mx::add(y, mx::expand_dims(mx::take(*bias_, indices, 0), -2));
  return adapters.apply_switch(adapter_site_, x, y, indices, sorted_indices);
}

size_t SwitchLinear::bytes() const {
  return (quantized_ ? quantized_->bytes() : dense_->nbytes()) + (bias_ ? bias_->nbytes() : 0);
}

SwitchGlu SwitchGlu::load(WeightStore& weights, const QuantizationConfig& quantization,
                          const std::string& prefix, int experts, int hidden, int ffn, bool bias,
                          MlpActivation activation, KernelMode kernels) {
  if (activation != MlpActivation::silu && activation != MlpActivation::gelu_approx)
    throw std::invalid_argument("[SwitchGlu] experts gate with silu or gelu_approx");
  SwitchGlu glu;
  glu.activation_ = activation;
  auto expert = [&](const char* name, int in, int out) {
    return SwitchLinear::load(weights, quantization, prefix + name, experts, in, out, bias,
                              kernels);
  };
  glu.gate_proj_ = expert("gate_proj", hidden, ffn);
  glu.up_proj_ = expert("up_proj", hidden, ffn);
  glu.down_proj_ = expert("down_proj", ffn, hidden);
  return glu;
}

void SwitchGlu::register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer) {
  sites.add(prefix + "gate_proj", layer, gate_proj_);
  sites.add(prefix + "up_proj", layer, up_proj_);
  sites.add(prefix + "down_proj", layer, down_proj_);
}

mx::array SwitchGlu::operator()(const mx::array& x, const mx::array& indices,
                                const RowAdapters& adapters) const {
  auto input = mx::expand_dims(x, {-2, -3});  // [..., 1, 1, hidden]
  // Many tokens: sort them by expert, so each expert's weights are read
  // once (mlx-lm's threshold).
  const bool sort = indices.size() >= 64;
  auto chosen = indices;
  std::optional<mx::array> inverse_order;
  if (sort) {
    const int k = indices.shape(-1);
    auto flat = mx::flatten(indices);
    auto order = mx::argsort(flat);
    inverse_order = mx::argsort(order);
    input =
        mx::take(mx::flatten(input, 0, -3), mx::floor_divide(order, mx::array(k, mx::uint32)), 0);
    chosen = mx::take(flat, order, 0);
  }
  auto up = up_proj_(input, chosen, sort, adapters);
  auto gate = gate_proj_(input, chosen, sort, adapters);
  auto activated = activation_ == MlpActivation::gelu_approx ? geglu(gate, up) : swiglu(gate, up);
  auto out = down_proj_(activated, chosen, sort, adapters);
  if (sort) out = mx::unflatten(mx::take(out, *inverse_order, 0), 0, indices.shape());
  return mx::squeeze(out, -2);
}

}  // namespace mlx_cpp
