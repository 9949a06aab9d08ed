#pragma once
// qwen3_5's linear-attention layer, the gated DeltaNet: in_proj_qkv runs
// through a depthwise causal convolution (silu) over the last kernel_size
// tokens into queries, keys and values; the queries and keys are
// L2-normalized; each value head keeps a recurrent state [value_dim,
// key_dim] that decays by g and takes the delta rule's correction
// (v - state·k) · beta along k every token; the output (state·q) goes
// through an RMSNorm gated by silu(in_proj_z), then out_proj. Its cache
// keeps the convolution's inputs and the recurrent state (float32).
// Composed from MLX's ops as mlx-lm's GatedDeltaNet computes it on the
// CPU (gated_delta_ops, one step per token), so the stock path is
// bit-exact.
#include <mlx/array.h>

#include <memory>
#include <optional>
#include <string>

#include "model/layers.h"
#include "model/recurrent_mixer.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class GatedDeltaNet : public RecurrentMixer {
 public:
  // Loads <prefix>in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d,
  // dt_bias, A_log, norm and out_proj.
  static std::shared_ptr<GatedDeltaNet> load(WeightStore& weights,
                                             const QuantizationConfig& quantization,
                                             const std::string& prefix, int hidden,
                                             const GatedDeltaSpec& spec, float norm_eps,
                                             KernelMode kernels);

  mlx::core::array operator()(const mlx::core::array& x, RecurrentStateCache& cache,
                              const RowAdapters& adapters) const override;
  mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const override;
  // The convolution's inputs and the recurrent state.
  int state_slots() const override { return 2; }
  size_t bytes() const override;
  size_t parameter_count() const override;
  // Its projections under "<layer prefix>linear_attn.".
  void register_adapter_sites(AdapterSites& sites, const std::string& layer_prefix,
                              int layer) override;

 private:
  struct Projected {
    mlx::core::array qkv, z, b, a;
  };
  Projected project(const mlx::core::array& x, const RowAdapters& adapters) const;
  // One sequence's [1 or B, L, ...] projections through the convolution,
  // the recurrence and the gated norm, its cache advanced; before out_proj.
  mlx::core::array mix(const Projected& projected, RecurrentStateCache& cache) const;
  int conv_dim() const { return 2 * spec_.key_heads * spec_.key_dim + value_width(); }
  int value_width() const { return spec_.value_heads * spec_.value_dim; }

  GatedDeltaSpec spec_;
  Linear in_proj_qkv_, in_proj_z_, in_proj_b_, in_proj_a_, out_proj_;
  mlx::core::array conv_weight_ = mlx::core::array(0.0f);  // [conv_dim, kernel, 1]
  mlx::core::array dt_bias_ = mlx::core::array(0.0f);      // [value_heads]
  mlx::core::array a_log_ = mlx::core::array(0.0f);        // [value_heads]
  mlx::core::array norm_weight_ = mlx::core::array(0.0f);  // [value_dim]
  float norm_eps_ = 1e-6f;
};

}  // namespace mlx_cpp
