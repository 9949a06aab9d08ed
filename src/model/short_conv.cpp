#include "model/short_conv.h"

#include <mlx/ops.h>

#include "model/dense_transformer.h"
#include "model/depthwise_conv_weight.h"
#include "model/recurrent_state_cache.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

std::shared_ptr<ShortConv> ShortConv::load(WeightStore& weights,
                                           const QuantizationConfig& quantization,
                                           const std::string& prefix, int hidden, int kernel_size,
                                           bool bias, KernelMode kernels) {
  auto conv = std::make_shared<ShortConv>();
  conv->kernel_size_ = kernel_size;
  conv->in_proj_ =
      Linear::load(weights, quantization, prefix + "in_proj", hidden, 3 * hidden, bias, kernels);
  conv->out_proj_ =
      Linear::load(weights, quantization, prefix + "out_proj", hidden, hidden, bias, kernels);
  conv->conv_weight_ =
      load_depthwise_conv_weight(weights, prefix + "conv.weight", hidden, kernel_size);
  if (bias) conv->conv_bias_ = weights.take(prefix + "conv.bias", mx::Shape{hidden});
  return conv;
}

mx::array ShortConv::convolve(const mx::array& gated, RecurrentStateCache& cache) const {
  const int batch = gated.shape(0), length = gated.shape(1), hidden = gated.shape(2);
  const int keep = kernel_size_ - 1;
  auto state = cache.slot(0) ? *cache.slot(0) : mx::zeros({batch, keep, hidden}, gated.dtype());
  auto window = mx::concatenate({state, gated}, 1);  // [B, keep + L, hidden]
  const int total = window.shape(1);
  cache.advance({mx::slice(window, {0, total - keep, 0}, {batch, total, hidden})}, length);
  auto out = mx::conv1d(window, conv_weight_, /*stride=*/1, /*padding=*/0, /*dilation=*/1,
                        /*groups=*/hidden);
  return conv_bias_ ? mx::add(out, *conv_bias_) : out;
}

mx::array ShortConv::operator()(const mx::array& x, RecurrentStateCache& cache,
                                const RowAdapters& adapters) const {
  auto parts = mx::split(in_proj_(x, adapters), 3, -1);  // B, C, x
  auto convolved = convolve(mx::multiply(parts[0], parts[2]), cache);
  return out_proj_(mx::multiply(parts[1], convolved), adapters);
}

mx::array ShortConv::operator()(const mx::array& x, const LayerRows& rows) const {
  auto parts = mx::split(in_proj_(x, rows.adapters), 3, -1);
  auto gated = mx::multiply(parts[0], parts[2]);  // [rows, 1, hidden]
  const int count = x.shape(0);
  std::vector<mx::array> convolved;
  // Row by row, each as a batch of one runs it: consecutive positions of
  // one sequence advance their shared state in order.
  for (int b = 0; b < count; ++b) {
    auto* cache = rows.cache(b).as_recurrent_state();
    convolved.push_back(convolve(row_of(gated, b), *cache));
  }
  auto all = count == 1 ? convolved.front() : mx::concatenate(convolved, 0);
  return out_proj_(mx::multiply(parts[1], all), rows.adapters);
}

size_t ShortConv::bytes() const {
  return in_proj_.bytes() + out_proj_.bytes() + conv_weight_.nbytes() +
         (conv_bias_ ? conv_bias_->nbytes() : 0);
}

size_t ShortConv::parameter_count() const {
  const size_t hidden = conv_weight_.shape(0);
  return 4 * hidden * hidden + hidden * kernel_size_;
}

void ShortConv::register_adapter_sites(AdapterSites& sites, const std::string& layer_prefix,
                                       int layer) {
  sites.add(layer_prefix + "conv.in_proj", layer, in_proj_);
  sites.add(layer_prefix + "conv.out_proj", layer, out_proj_);
}

}  // namespace mlx_cpp
