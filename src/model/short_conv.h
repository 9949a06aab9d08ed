#pragma once
// lfm2's token mixer in its convolution layers: in_proj splits into B, C
// and x; B * x runs through a depthwise causal convolution over the last
// kernel_size tokens (the earlier ones from the layer's RecurrentStateCache);
// C gates the result; out_proj. Composed from MLX's ops as mlx-lm's
// ShortConv is, so the stock path is bit-exact.
#include <mlx/array.h>

#include <memory>
#include <optional>
#include <string>

#include "model/adapter_sites.h"
#include "model/layers.h"
#include "model/recurrent_mixer.h"

namespace mlx_cpp {

class RecurrentStateCache;
struct LayerRows;

class ShortConv : public RecurrentMixer {
 public:
  // Loads <prefix>in_proj, out_proj and conv (its weight as MLX keeps it,
  // [hidden, kernel, 1], or as transformers stores it, [hidden, 1, kernel]).
  static std::shared_ptr<ShortConv> load(WeightStore& weights,
                                         const QuantizationConfig& quantization,
                                         const std::string& prefix, int hidden, int kernel_size,
                                         bool bias, KernelMode kernels);

  mlx::core::array operator()(const mlx::core::array& x, RecurrentStateCache& cache,
                              const RowAdapters& adapters) const override;
  mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const override;
  int state_slots() const override { return 1; }
  size_t bytes() const override;
  size_t parameter_count() const override;
  // Its projections under "<layer prefix>conv.".
  void register_adapter_sites(AdapterSites& sites, const std::string& layer_prefix,
                              int layer) override;

 private:
  // B * x [B, L, hidden] after the state: the convolution's output, and
  // the state advanced.
  mlx::core::array convolve(const mlx::core::array& gated, RecurrentStateCache& cache) const;

  Linear in_proj_, out_proj_;
  mlx::core::array conv_weight_ = mlx::core::array(0.0f);  // [hidden, kernel_size, 1]
  std::optional<mlx::core::array> conv_bias_;              // [hidden]
  int kernel_size_ = 3;
};

}  // namespace mlx_cpp
