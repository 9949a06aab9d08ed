#pragma once
// Gemma 4's text stack, a dedicated graph transcribed op for op from
// mlx-lm's gemma4_text module. Beside Gemma 3 it has:
//   * per-layer inputs (the smaller models): a second embedding table gives
//     every token a small vector per layer, mixed with a projection of the
//     embedded token; after its MLP each layer adds a gated projection of
//     its vector;
//   * shared keys and values: the last layers keep no cache and attend over
//     the keys and values of the last earlier layer of their kind, at that
//     layer's positions (so the model has fewer caches than layers);
//   * full-attention layers with a wider head and "proportional" rope that
//     turns only a leading fraction of it, optionally with the keys'
//     projection giving the values (k_eq_v);
//   * q, k and v RMSNorms (v's without a weight), an attention scale of 1,
//     plain-weight norms, a learned scalar per layer, logits softcapped;
//   * optionally a mixture of experts beside the dense MLP.
#include <optional>
#include <vector>

#include "model/gemma4_config.h"
#include "model/language_model.h"
#include "model/layers.h"
#include "model/mlp.h"
#include "model/rope.h"

namespace mlx_cpp {

class WeightStore;

class Gemma4Text : public LanguageModel {
 public:
  Gemma4Text(Gemma4Config config, WeightStore& weights, const QuantizationConfig& quantization,
             KernelMode kernels);
  ~Gemma4Text() override;  // where Layer is complete
  // Its adapter sites point into its layers: it stays where it was built.
  Gemma4Text(const Gemma4Text&) = delete;
  Gemma4Text& operator=(const Gemma4Text&) = delete;

  mlx::core::array forward(const mlx::core::array& tokens, CacheList& caches,
                           const AdapterStack* adapters = nullptr) const override;
  mlx::core::array forward_batch(const mlx::core::array& tokens,
                                 const ForwardBatch& batch) const override;
  // One cache per layer that owns its keys (the shared layers have none),
  // as mlx-lm's make_cache lists them.
  CacheList make_caches() const override;
  mlx::core::array hidden_states(const mlx::core::array& tokens,
                                 const std::vector<int>& lengths = {}) const override;
  std::shared_ptr<const BoundAdapter> bind_adapter(const AdapterFiles& files,
                                                   const std::string& name) const override;
  const AdapterSites& adapter_sites() const override { return adapter_sites_; }
  std::optional<std::string> adapter_training_refusal() const override;
  const std::string& model_type() const override { return model_type_; }
  std::string tier() const override { return "dedicated"; }
  bool mixture_of_experts() const override { return config_.experts.has_value(); }
  int vocab_size() const override { return config_.vocab_size; }
  // Refused where layers share keys (mlx-lm's read them as float arrays).
  std::optional<std::string> quantized_kv_refusal(
      const KvQuantization& quantization) const override;
  size_t parameter_count() const override { return parameter_count_; }
  size_t weight_bytes_per_token() const override;
  size_t weight_bytes() const override;

  struct Layer;
  struct ExpertBranch;
  // What one layer's attention hands the layers that share its keys: the
  // keys and values it attended over and the position its new tokens
  // started at, per batch row.
  struct SharedKeys {
    std::vector<mlx::core::array> keys, values;
    std::vector<int> offsets;
  };

 private:
  // Embeds the tokens and runs the layers → the last hidden state. With
  // one cache list (forward) the rows share it; with one per row (a batch)
  // each row attends over its own, in `batch`'s ring order for sliding
  // layers. Masks: one per cache list, of each kind of layer.
  mlx::core::array run_layers(const mlx::core::array& tokens, const RowAdapters& adapters,
                              const std::vector<AttentionMask>& full_masks,
                              const std::vector<AttentionMask>& sliding_masks,
                              const std::vector<CacheList*>& row_caches,
                              const ForwardBatch* batch) const;
  // Each row's masks of its next `length` tokens: [full, sliding].
  std::pair<AttentionMask, AttentionMask> masks_of(const CacheList& caches, int length) const;
  // The per-layer inputs [B, L, layers, width] of tokens embedded as h.
  mlx::core::array per_layer_inputs(const mlx::core::array& tokens,
                                    const mlx::core::array& h) const;
  mlx::core::array head(const mlx::core::array& h, const RowAdapters& adapters) const;
  // A layer's router and experts (under prefix "model.layers.N.").
  ExpertBranch load_experts(WeightStore& weights, const QuantizationConfig& quantization,
                            const std::string& prefix) const;

  Gemma4Config config_;
  std::string model_type_ = "gemma4_text";
  // MLX's ops throughout (gemma4_text.cpp says why).
  static constexpr KernelMode kernels_ = KernelMode::stock;
  KernelMode expert_kernels_;  // the experts' decode matvecs (bit-exact either way)
  Embedding embed_tokens_;
  std::optional<Embedding> embed_tokens_per_layer_;
  std::optional<Linear> per_layer_model_projection_;
  std::optional<Norm> per_layer_projection_norm_;
  std::vector<Layer> layers_;
  std::optional<Norm> final_norm_;
  std::optional<Linear> lm_head_;
  AdapterSites adapter_sites_;
  TransformerSpec adapter_spec_;  // what adapter binding reads: the type and depth
  size_t parameter_count_ = 0;
};

}  // namespace mlx_cpp
