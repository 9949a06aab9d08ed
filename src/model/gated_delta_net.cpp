#include "model/gated_delta_net.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cmath>

#include "model/activations.h"
#include "model/dense_transformer.h"
#include "model/depthwise_conv_weight.h"
#include "model/recurrent_state_cache.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// Position t of [B, L, ...] as [B, ...] (Python's a[:, t]).
mx::array at_position(const mx::array& a, int t) {
  auto start = mx::Shape(a.ndim(), 0);
  auto stop = a.shape();
  start[1] = t;
  stop[1] = t + 1;
  return mx::squeeze(mx::slice(a, start, stop), 1);
}

// One token of the gated delta rule (mlx-lm's _gated_delta_step_ops):
// q, k [B, H, Dk]; v [B, H, Dv]; g, beta [B, H]; state [B, H, Dv, Dk] in
// float32. Returns y [B, H, Dv] in q's dtype; the state moves on.
mx::array delta_step(const mx::array& q, const mx::array& k, const mx::array& v, const mx::array& g,
                     const mx::array& beta, mx::array& state) {
  state = mx::multiply(state, mx::expand_dims(g, {2, 3}));
  auto k_row = mx::expand_dims(k, 2);  // [B, H, 1, Dk]
  auto kv_memory = mx::sum(mx::multiply(state, k_row), -1);
  auto delta = mx::multiply(mx::subtract(v, kv_memory), mx::expand_dims(beta, 2));
  state = mx::add(state, mx::multiply(k_row, mx::expand_dims(delta, 3)));
  auto y = mx::sum(mx::multiply(state, mx::expand_dims(q, 2)), -1);
  return mx::astype(y, q.dtype());
}

}  // namespace

std::shared_ptr<GatedDeltaNet> GatedDeltaNet::load(WeightStore& weights,
                                                   const QuantizationConfig& quantization,
                                                   const std::string& prefix, int hidden,
                                                   const GatedDeltaSpec& spec, float norm_eps,
                                                   KernelMode kernels) {
  auto net = std::make_shared<GatedDeltaNet>();
  net->spec_ = spec;
  net->norm_eps_ = norm_eps;
  auto linear = [&](const std::string& name, int in, int out) {
    return Linear::load(weights, quantization, prefix + name, in, out, /*bias=*/false, kernels);
  };
  const int conv_dim = net->conv_dim(), value_width = net->value_width();
  net->in_proj_qkv_ = linear("in_proj_qkv", hidden, conv_dim);
  net->in_proj_z_ = linear("in_proj_z", hidden, value_width);
  net->in_proj_b_ = linear("in_proj_b", hidden, spec.value_heads);
  net->in_proj_a_ = linear("in_proj_a", hidden, spec.value_heads);
  net->out_proj_ = linear("out_proj", value_width, hidden);
  net->conv_weight_ =
      load_depthwise_conv_weight(weights, prefix + "conv1d.weight", conv_dim, spec.kernel_size);
  net->dt_bias_ = weights.take(prefix + "dt_bias", mx::Shape{spec.value_heads});
  net->a_log_ = weights.take(prefix + "A_log", mx::Shape{spec.value_heads});
  net->norm_weight_ = weights.take(prefix + "norm.weight", mx::Shape{spec.value_dim});
  return net;
}

GatedDeltaNet::Projected GatedDeltaNet::project(const mx::array& x,
                                                const RowAdapters& adapters) const {
  auto parts =
      Linear::apply_all(x, {&in_proj_qkv_, &in_proj_z_, &in_proj_b_, &in_proj_a_}, adapters);
  return {parts[0], parts[1], parts[2], parts[3]};
}

mx::array GatedDeltaNet::mix(const Projected& projected, RecurrentStateCache& cache) const {
  const int batch = projected.qkv.shape(0), length = projected.qkv.shape(1);
  const int keep = spec_.kernel_size - 1, channels = conv_dim();
  const int key_heads = spec_.key_heads, value_heads = spec_.value_heads;
  const int key_dim = spec_.key_dim, value_dim = spec_.value_dim;
  const int key_width = key_heads * key_dim;

  // The causal convolution over the kept inputs and these.
  auto conv_state =
      cache.slot(0) ? *cache.slot(0) : mx::zeros({batch, keep, channels}, projected.qkv.dtype());
  auto window = mx::concatenate({conv_state, projected.qkv}, 1);
  const int total = window.shape(1);
  auto kept = mx::slice(window, {0, total - keep, 0}, {batch, total, channels});
  auto convolved = silu(mx::conv1d(window, conv_weight_, /*stride=*/1, /*padding=*/0,
                                   /*dilation=*/1, /*groups=*/channels));
  auto parts = mx::split(convolved, mx::Shape{key_width, 2 * key_width}, -1);
  auto q = mx::reshape(parts[0], {batch, length, key_heads, key_dim});
  auto k = mx::reshape(parts[1], {batch, length, key_heads, key_dim});
  auto v = mx::reshape(parts[2], {batch, length, value_heads, value_dim});

  // L2-normalized queries and keys, the readout scale key_dim^-0.5 folded
  // into the queries (mlx-lm's normalize_qk, through rms_norm: its eps is
  // scaled by the same factor).
  const double inv_scale = std::pow(double(key_dim), -0.5);
  const double inv_scale_squared = std::pow(inv_scale, 2.0);
  const float rms_eps = static_cast<float>(1e-6 * inv_scale_squared);
  q = mx::multiply(mx::array(static_cast<float>(inv_scale_squared), q.dtype()),
                   mx::fast::rms_norm(q, std::nullopt, rms_eps));
  k = mx::multiply(mx::array(static_cast<float>(inv_scale), k.dtype()),
                   mx::fast::rms_norm(k, std::nullopt, rms_eps));

  // The recurrence, token by token, as mlx-lm runs it on the CPU.
  auto beta = mx::sigmoid(projected.b);
  auto g = delta_decay(a_log_, projected.a, dt_bias_);
  auto state = cache.slot(1) ? *cache.slot(1)
                             : mx::zeros({batch, value_heads, value_dim, key_dim}, mx::float32);
  if (const int repeats = value_heads / key_heads; repeats > 1) {
    q = mx::repeat(q, repeats, -2);
    k = mx::repeat(k, repeats, -2);
  }
  std::vector<mx::array> outputs;
  outputs.reserve(length);
  for (int t = 0; t < length; ++t)
    outputs.push_back(delta_step(at_position(q, t), at_position(k, t), at_position(v, t),
                                 at_position(g, t), at_position(beta, t), state));
  auto y = mx::stack(outputs, 1);  // [B, L, value_heads, value_dim]
  cache.advance({kept, state}, length);

  auto z = mx::reshape(projected.z, {batch, length, value_heads, value_dim});
  auto normed = precise_swiglu(y, z, mx::fast::rms_norm(y, norm_weight_, norm_eps_));
  return mx::reshape(normed, {batch, length, -1});
}

mx::array GatedDeltaNet::operator()(const mx::array& x, RecurrentStateCache& cache,
                                    const RowAdapters& adapters) const {
  return out_proj_(mix(project(x, adapters), cache), adapters);
}

mx::array GatedDeltaNet::operator()(const mx::array& x, const LayerRows& rows) const {
  const auto projected = project(x, rows.adapters);
  const int count = x.shape(0);
  std::vector<mx::array> mixed;
  // Row by row, each as a batch of one runs it: consecutive positions of
  // one sequence advance their shared state in order.
  for (int b = 0; b < count; ++b)
    mixed.push_back(mix({row_of(projected.qkv, b), row_of(projected.z, b), row_of(projected.b, b),
                         row_of(projected.a, b)},
                        *rows.cache(b).as_recurrent_state()));
  return out_proj_(count == 1 ? mixed.front() : mx::concatenate(mixed, 0), rows.adapters);
}

size_t GatedDeltaNet::bytes() const {
  return in_proj_qkv_.bytes() + in_proj_z_.bytes() + in_proj_b_.bytes() + in_proj_a_.bytes() +
         out_proj_.bytes() + conv_weight_.nbytes() + dt_bias_.nbytes() + a_log_.nbytes() +
         norm_weight_.nbytes();
}

size_t GatedDeltaNet::parameter_count() const {
  const size_t hidden = in_proj_z_.input_dims(), channels = conv_dim(), values = value_width(),
               heads = spec_.value_heads;
  return hidden * (channels + values + 2 * heads) + channels * spec_.kernel_size + 2 * heads +
         spec_.value_dim + values * hidden;
}

void GatedDeltaNet::register_adapter_sites(AdapterSites& sites, const std::string& layer_prefix,
                                           int layer) {
  const auto prefix = layer_prefix + "linear_attn.";
  sites.add(prefix + "in_proj_qkv", layer, in_proj_qkv_);
  sites.add(prefix + "in_proj_z", layer, in_proj_z_);
  sites.add(prefix + "in_proj_b", layer, in_proj_b_);
  sites.add(prefix + "in_proj_a", layer, in_proj_a_);
  sites.add(prefix + "out_proj", layer, out_proj_);
}

}  // namespace mlx_cpp
