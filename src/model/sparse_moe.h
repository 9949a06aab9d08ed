#pragma once
// A mixture-of-experts MLP as mlx-lm's MoE blocks compute it: a router
// picks each token's top k experts and their weights (MoeSpec says how),
// the experts run as mlx-lm's SwitchGLU does (gather_mm / gather_qmm over
// the chosen experts' stacked weights, tokens sorted by expert when there
// are many), their outputs are summed by weight, and shared experts are
// added. The router always runs MLX's ops, on both paths: a rounding
// difference there would change which experts run, not just the bits.
#include <mlx/array.h>

#include <optional>
#include <string>

#include "model/adapter_sites.h"
#include "model/layers.h"
#include "model/mlp.h"
#include "model/switch_glu.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class WeightStore;

struct ExpertChoice {
  mlx::core::array indices;  // [..., k]
  mlx::core::array weights;  // [..., k]
};

class SparseMoe {
 public:
  static SparseMoe load(WeightStore& weights, const QuantizationConfig& quantization,
                        const std::string& prefix, const MoeSpec& spec, int hidden,
                        KernelMode kernels, KernelMode expert_kernels = KernelMode::stock);
  // x [B, L, hidden] → [B, L, hidden]; rows whose adapters differ on
  // the experts run as batches of their own.
  mlx::core::array operator()(const mlx::core::array& x, const RowAdapters& adapters) const;
  ExpertChoice route(const mlx::core::array& x, const RowAdapters& adapters) const;
  // Records the router, the experts and the shared experts as adapter
  // sites under `prefix` ("…mlp.").
  void register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer);
  size_t bytes() const;
  // What one token reads: the router, k of the experts, the shared ones.
  size_t bytes_per_token() const;

 private:
  // The whole block for rows that share their expert adapters.
  mlx::core::array apply_uniform(const mlx::core::array& x, const RowAdapters& adapters) const;
  ExpertChoice sparsemixer(const mlx::core::array& logits) const;

  MoeSpec spec_;
  Linear gate_;
  std::optional<mlx::core::array> selection_bias_;
  SwitchGlu experts_;
  std::optional<Mlp> shared_;
  std::optional<Linear> shared_gate_;
};

}  // namespace mlx_cpp
