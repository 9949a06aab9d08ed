#pragma once
// lfm2's token mixer in its convolution layers: in_proj splits into B, C
// and x; B * x runs through a depthwise causal convolution over the last
// kernel_size tokens (the earlier ones from the layer's RecurrentStateCache);
// C gates the result; out_proj. Composed from MLX's ops as mlx-lm's
// ShortConv is, so the stock path is bit-exact.
#include <mlx/array.h>

#include <optional>
#include <string>

#include "model/adapter_sites.h"
#include "model/layers.h"

namespace mlx_cpp {

class RecurrentStateCache;
struct LayerRows;

struct ShortConv {
  Linear in_proj, out_proj;
  mlx::core::array conv_weight = mlx::core::array(0.0f);  // [hidden, kernel_size, 1]
  std::optional<mlx::core::array> conv_bias;              // [hidden]
  int kernel_size = 3;

  // Loads <prefix>in_proj, out_proj and conv (its weight as MLX keeps it,
  // [hidden, kernel, 1], or as transformers stores it, [hidden, 1, kernel]).
  static ShortConv load(WeightStore& weights, const QuantizationConfig& quantization,
                        const std::string& prefix, int hidden, int kernel_size, bool bias,
                        KernelMode kernels);

  // x: [B, L, hidden] → [B, L, hidden], the cache's state advanced by L.
  mlx::core::array operator()(const mlx::core::array& x, RecurrentStateCache& cache,
                              const RowAdapters& adapters) const;
  // x: [rows, 1, hidden], each row with its own cache (or, for consecutive
  // positions, one cache the rows advance in turn).
  mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const;
  size_t bytes() const;
  // Records its projections as adapter sites under `prefix` ("…conv.").
  void register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer);

 private:
  // B * x [B, L, hidden] after the state: the convolution's output, and
  // the state advanced.
  mlx::core::array convolve(const mlx::core::array& gated, RecurrentStateCache& cache) const;
};

}  // namespace mlx_cpp
