#pragma once
// Every expert's projections stacked, as mlx-lm's switch_layers hold them:
// one projection of all experts (SwitchLinear), and the experts' gated MLP
// (SwitchGLU) run over each token's chosen experts with gather_mm /
// gather_qmm. Routing is the caller's (model/sparse_moe.h, Gemma 4's
// router).
#include <mlx/array.h>

#include <optional>
#include <string>
#include <vector>

#include "model/adapter_sites.h"
#include "model/layers.h"
#include "model/row_adapters.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class WeightStore;

// One projection of every expert: [experts, out, in], dense or affine
// quantized, with an optional [experts, out] bias.
class SwitchLinear {
 public:
  // With fast kernels, a decode step's quantized experts run the own
  // kernel (kernels::gather_quantized_matvec_fast: MLX's bits, read faster).
  static SwitchLinear load(WeightStore& weights, const QuantizationConfig& quantization,
                           const std::string& path, int experts, int in_dims, int out_dims,
                           bool has_bias, KernelMode kernels = KernelMode::stock);
  // x [..., 1, in] (or [n, 1, in] sorted), indices [...] → [..., 1, out].
  mlx::core::array operator()(const mlx::core::array& x, const mlx::core::array& indices,
                              bool sorted_indices, const RowAdapters& adapters) const;
  size_t bytes() const;
  int experts() const { return experts_; }
  int input_dims() const { return in_dims_; }
  int output_dims() const { return out_dims_; }
  int adapter_site() const { return adapter_site_; }
  void set_adapter_site(int site) { adapter_site_ = site; }

 private:
  int experts_ = 0, in_dims_ = 0, out_dims_ = 0;
  int adapter_site_ = -1;
  std::optional<mlx::core::array> dense_;
  std::optional<QuantizedTensor> quantized_;
  std::optional<mlx::core::array> bias_;
  KernelMode kernels_ = KernelMode::stock;
};

// mlx-lm's SwitchGLU: down(act(gate(x)) * up(x)) of each chosen expert,
// the activation and the product one compiled function (swiglu, or geglu
// for gelu_approx), tokens sorted by expert when there are many.
class SwitchGlu {
 public:
  // <prefix>gate_proj, up_proj, down_proj.
  static SwitchGlu load(WeightStore& weights, const QuantizationConfig& quantization,
                        const std::string& prefix, int experts, int hidden, int ffn, bool bias,
                        MlpActivation activation = MlpActivation::silu,
                        KernelMode kernels = KernelMode::stock);
  // x [..., hidden], indices [..., k] → [..., k, hidden].
  mlx::core::array operator()(const mlx::core::array& x, const mlx::core::array& indices,
                              const RowAdapters& adapters) const;
  // Records the three projections as adapter sites under `prefix`.
  void register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer);
  // Their site numbers (rows that differ on them run apart).
  std::vector<int> adapter_sites() const {
    return {gate_proj_.adapter_site(), up_proj_.adapter_site(), down_proj_.adapter_site()};
  }
  size_t bytes() const { return gate_proj_.bytes() + up_proj_.bytes() + down_proj_.bytes(); }
  int experts() const { return gate_proj_.experts(); }

 private:
  SwitchLinear gate_proj_, up_proj_, down_proj_;
  MlpActivation activation_ = MlpActivation::silu;
};

}  // namespace mlx_cpp
