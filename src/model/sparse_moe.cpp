#include "model/sparse_moe.h"

#include <mlx/device.h>
#include <mlx/ops.h>

#include <limits>

#include "model/activations.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

SparseMoe SparseMoe::load(WeightStore& weights, const QuantizationConfig& quantization,
                          const std::string& prefix, const MoeSpec& spec, int hidden,
                          KernelMode kernels, KernelMode expert_kernels) {
  SparseMoe moe;
  moe.spec_ = spec;
  const int experts = spec.num_experts, ffn = spec.intermediate_size;
  moe.gate_ = Linear::load(weights, quantization, prefix + "gate", hidden, experts, false);
  if (spec.selection_bias)
    moe.selection_bias_ = weights.take(prefix + "gate.e_score_correction_bias", mx::Shape{experts});
  moe.experts_ = SwitchGlu::load(weights, quantization, prefix + "switch_mlp.", experts, hidden,
                                 ffn, spec.expert_bias, MlpActivation::silu, expert_kernels);
  if (spec.shared_intermediate_size > 0) {
    const int shared = spec.shared_intermediate_size;
    auto linear = [&](const char* name, int in, int out) {
      return Linear::load(weights, quantization, prefix + "shared_experts." + name, in, out,
                          spec.shared_bias, kernels);
    };
    Mlp mlp;
    mlp.gate_proj = linear("gate_proj", hidden, shared);
    mlp.up_proj = linear("up_proj", hidden, shared);
    mlp.down_proj = linear("down_proj", shared, hidden);
    mlp.kernels = kernels;
    moe.shared_ = std::move(mlp);
    if (spec.shared_gate)
      moe.shared_gate_ =
          Linear::load(weights, quantization, prefix + "shared_expert_gate", hidden, 1, false);
  }
  return moe;
}

ExpertChoice SparseMoe::sparsemixer(const mx::array& gates) const {
  const auto dtype = gates.dtype();
  const auto minus_infinity = mx::array(-std::numeric_limits<float>::infinity(), dtype);
  // 2 * jitter_eps is a Python float product before it meets the array.
  const auto band_width = mx::array(float(2 * spec_.sparsemixer_jitter), dtype);
  auto masked = gates;
  std::vector<mx::array> indices, weights;
  for (int step = 0; step < spec_.top_k; ++step) {
    auto top = mx::max(masked, -1, /*keepdims=*/true);
    auto index = mx::argmax(masked, -1, /*keepdims=*/true);
    auto factor = mx::maximum(mx::abs(gates), top);
    auto band = mx::where(mx::greater(mx::divide(mx::subtract(top, gates), factor), band_width),
                          minus_infinity, masked);
    band = mx::softmax(band, -1, /*precise=*/true);
    weights.push_back(mx::take_along_axis(band, index, -1));
    indices.push_back(index);
    masked = mx::put_along_axis(masked, index, minus_infinity, -1);
  }
  return {mx::concatenate(indices, -1), mx::concatenate(weights, -1)};
}

ExpertChoice SparseMoe::route(const mx::array& x, const RowAdapters& adapters) const {
  const int k = spec_.top_k, experts = spec_.num_experts;
  auto logits = gate_(x, adapters);
  if (spec_.scoring == RouterScoring::sparsemixer) return sparsemixer(logits);
  // `scores` give the weights, `selection` picks the experts.
  mx::array scores = logits;
  switch (spec_.scoring) {
    case RouterScoring::softmax:
      if (spec_.scores_in_float32) scores = mx::astype(scores, mx::float32);
      scores = mx::softmax(scores, -1, spec_.precise_softmax);
      break;
    case RouterScoring::sigmoid:
      scores = mx::sigmoid(mx::astype(scores, mx::float32));
      break;
    default:
      break;
  }
  auto selection = selection_bias_ ? mx::add(scores, *selection_bias_) : scores;
  const int dropped_groups = spec_.groups - spec_.top_k_groups;
  if (dropped_groups != 0) {
    // Zero every expert of the groups whose two best scores sum lowest.
    auto grouped = mx::unflatten(selection, -1, {spec_.groups, -1});
    auto group_scores = mx::sum(mx::topk(grouped, 2, -1), -1, /*keepdims=*/true);
    auto lowest = mx::argpartition(group_scores, dropped_groups - 1, -2);
    auto start = mx::Shape(lowest.ndim(), 0);
    auto stop = lowest.shape();
    stop[stop.size() - 2] = dropped_groups;
    grouped = mx::put_along_axis(grouped, mx::slice(lowest, start, stop), mx::array(0.0f), -2);
    selection = mx::flatten(grouped, -2, -1);
  }
  auto last_axis_slice = [](const mx::array& a, int begin, int end) {
    auto start = mx::Shape(a.ndim(), 0);
    auto stop = a.shape();
    start.back() = begin;
    stop.back() = end;
    return mx::slice(a, start, stop);
  };
  auto indices =
      spec_.top_k_form == TopKForm::highest
          ? last_axis_slice(mx::argpartition(selection, experts - k, -1), experts - k, experts)
          : last_axis_slice(mx::argpartition(mx::negative(selection), k - 1, -1), 0, k);
  auto weights = mx::take_along_axis(scores, indices, -1);
  if (spec_.scoring == RouterScoring::softmax_of_top_k) {
    if (spec_.scores_in_float32) weights = mx::astype(weights, mx::float32);
    weights = mx::softmax(weights, -1, spec_.precise_softmax);
  }
  if (spec_.normalization == TopKNormalization::by_sum)
    weights = mx::divide(weights, mx::sum(weights, -1, /*keepdims=*/true));
  if (spec_.normalization == TopKNormalization::by_floored_sum)
    weights = mx::divide(weights, mx::maximum(mx::sum(weights, -1, /*keepdims=*/true),
                                              mx::array(1e-12f, weights.dtype())));
  if (spec_.routed_scaling)
    weights = mx::multiply(weights, mx::array(*spec_.routed_scaling, weights.dtype()));
  return {indices, weights};
}

mx::array SparseMoe::operator()(const mx::array& x, const RowAdapters& adapters) const {
  return adapters.by_row_groups(experts_.adapter_sites(), x,
                                [this](const mx::array& rows, const RowAdapters& uniform) {
                                  return apply_uniform(rows, uniform);
                                });
}

void SparseMoe::register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer) {
  sites.add(prefix + "gate", layer, gate_);
  experts_.register_adapter_sites(sites, prefix + "switch_mlp.", layer);
  if (shared_) shared_->register_adapter_sites(sites, prefix + "shared_experts.", layer);
  if (shared_gate_) sites.add(prefix + "shared_expert_gate", layer, *shared_gate_);
}

mx::array SparseMoe::apply_uniform(const mx::array& x, const RowAdapters& adapters) const {
  auto [indices, weights] = route(x, adapters);
  auto y = experts_(x, indices, adapters);
  y = mx::astype(mx::sum(mx::multiply(y, mx::expand_dims(weights, -1)), -2), y.dtype());
  if (!shared_) return y;
  auto shared = (*shared_)(x, adapters);
  if (shared_gate_) shared = mx::multiply(mx::sigmoid((*shared_gate_)(x, adapters)), shared);
  return mx::add(y, shared);
}

size_t SparseMoe::bytes() const {
  return gate_.bytes() + experts_.bytes() + (shared_ ? shared_->bytes() : 0) +
         (shared_gate_ ? shared_gate_->bytes() : 0);
}

size_t SparseMoe::bytes_per_token() const {
  return gate_.bytes() + experts_.bytes() / spec_.num_experts * spec_.top_k +
         (shared_ ? shared_->bytes() : 0) + (shared_gate_ ? shared_gate_->bytes() : 0);
}

}  // namespace mlx_cpp
