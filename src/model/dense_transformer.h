#pragma once
// The generic dense decoder: one graph for the llama family, shaped by a
// TransformerSpec (norm kinds, q/k norms, biases, the MLP's form and
// activation, sequential or parallel blocks, sandwich norms, sliding-window
// layers, softcaps, tied head). Reads like the maths:
// norm → attention → residual → norm → MLP → residual.
#include <optional>
#include <vector>

#include "model/fused_decode_block.h"
#include "model/language_model.h"
#include "model/layers.h"
#include "model/mlp.h"
#include "model/recurrent_mixer.h"
#include "model/rope.h"
#include "model/sparse_moe.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class WeightStore;

// Row b of a batch [B, ...], as [1, ...]: what a row of LayerRows computes
// on, as a batch of one.
mlx::core::array row_of(const mlx::core::array& t, int b);

// One layer's view of a batch: each row's cache of this layer and the mask
// of its next tokens.
struct LayerRows {
  const ForwardBatch& batch;
  std::size_t layer;
  const std::vector<AttentionMask>& masks;  // per row
  bool sliding = false;                     // a sliding-window layer
  const RowAdapters& adapters;              // per row
  KvCache& cache(std::size_t row) const { return *(*batch.rows[row].caches)[layer]; }
};

struct Attention {
  Linear q_proj, k_proj, v_proj, o_proj;
  std::optional<Norm> q_norm, k_norm;
  bool qk_norm_full_width = false;  // olmo2: over the whole projection, not per head
  bool qk_norm_after_rope = false;  // hunyuan
  AttentionUpcast upcast = AttentionUpcast::none;
  std::optional<float> softcap;  // gemma2: attention computed from ops, logits capped
  std::optional<QueryPositionScale> query_position_scale;  // ministral3
  // qwen3_5: q_proj gives each head its queries then a gate of as many
  // values; the output goes into o_proj times sigmoid(gate).
  bool output_gate = false;
  RotaryEmbedding rope;
  int num_heads = 0, num_kv_heads = 0;
  float scale = 1.0f;
  KernelMode kernels = KernelMode::stock;  // fast: own attention kernel (decode and prefill)
  // The fast path's float16 keys and values (a cache's memory); an encoder
  // keeps no cache and keeps float32.
  bool half_keys_on_fast_path = true;

  // x: [B, L, hidden] → [B, L, hidden]
  mlx::core::array operator()(const mlx::core::array& x, const AttentionMask& mask, KvCache& cache,
                              const RowAdapters& adapters) const;
  // x: [B, L, hidden], one row per batch row, each with its own cache.
  mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const;
  size_t bytes() const;
  // Records its projections as adapter sites under `prefix` ("…self_attn.").
  void register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer);

 private:
  struct Heads;
  // [B, L, hidden] → queries, keys and values [B, heads, L, head_dim].
  Heads project_heads(const mlx::core::array& x, const RowAdapters& adapters) const;
  // Attention computed otherwise than by the fused op (casts, softcaps)
  // runs MLX's ops on both paths.
  bool plain() const { return upcast == AttentionUpcast::none && !softcap; }
  // Rope at `offset`, q/k norms after it, the fast path's float16 keys and
  // values, the position scale of the queries: what goes into the cache
  // and the attention.
  Heads prepare(const mlx::core::array& queries, mlx::core::array keys, mlx::core::array values,
                int offset) const;
  // One row's attention: rope at the cache's offset, the cache updated,
  // attention over it → [B, heads, L, head_dim].
  mlx::core::array attend(const mlx::core::array& queries, mlx::core::array keys,
                          mlx::core::array values, const AttentionMask& mask, KvCache& cache,
                          std::optional<int> ring_newest_first = std::nullopt) const;
  // Attention of queries (rope applied) over keys and values fetched from
  // a cache that holds `offset` tokens before the queries': MLX's fused op,
  // the own kernel or, for casts and softcaps, MLX's ops.
  mlx::core::array attend_fetched(mlx::core::array queries, mlx::core::array keys,
                                  const mlx::core::array& values, const AttentionMask& mask,
                                  int offset) const;
  // All rows' attention in one kernel (the fast path on the GPU, each row
  // over its own cache in place): [rows, heads, 1, head_dim]; nullopt, with
  // no cache touched, where it does not apply.
  std::optional<mlx::core::array> attend_rows_at_once(const Heads& heads,
                                                      const LayerRows& rows) const;
  // Consecutive tokens of one or more sequences
  // (ForwardBatch::consecutive_positions), each sequence's over its cache,
  // written once for all of its rows; nullopt, with no cache touched, where
  // a cache is not one in-order storage.
  std::optional<mlx::core::array> attend_consecutive_rows(const Heads& heads,
                                                          const LayerRows& rows) const;
  // One sequence's one new token on the GPU's fast path, over its cache's
  // storage in place (the cache already updated); nullopt where that does
  // not apply.
  std::optional<mlx::core::array> attend_in_place(const mlx::core::array& queries,
                                                  const KvCache& cache) const;
  // [B, heads, L, head_dim] → [B, L, hidden], times sigmoid(gate) before
  // o_proj where the queries came with one.
  mlx::core::array output(const mlx::core::array& attended, const Heads& heads,
                          const RowAdapters& adapters) const;
};

struct TransformerBlock {
  Attention attention;  // the token mixer, unless
  // a recurrent mixer replaces it (lfm2's convolution, qwen3_5's DeltaNet)
  std::shared_ptr<RecurrentMixer> recurrent;
  Mlp mlp;                       // the feed-forward branch, unless
  std::optional<SparseMoe> moe;  // a mixture of experts replaces it
  BlockLayout layout = BlockLayout::sequential;
  std::optional<Norm> input_norm;  // none in a post-norm block (olmo2)
  // llama: before the MLP; gemma, olmo2: on the attention output; none in
  // a parallel block.
  std::optional<Norm> post_attention_norm;
  std::optional<Norm> pre_feedforward_norm;   // gemma 3
  std::optional<Norm> post_feedforward_norm;  // gemma 3, olmo2: on the MLP output
  std::optional<float> residual_scale;        // granite, minicpm: branch outputs times this
  bool sandwich_clip = true;                  // gemma 3: float16 sums clipped; glm4: plain adds
  bool sliding = false;

  mlx::core::array operator()(const mlx::core::array& x, const AttentionMask& mask, KvCache& cache,
                              const RowAdapters& adapters) const;
  mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const;
  size_t bytes() const;
  // What one token's pass reads (of a mixture of experts, k experts).
  size_t bytes_per_token() const;
  // The MLP, or the mixture of experts in its place.
  mlx::core::array feed_forward(const mlx::core::array& x, const RowAdapters& adapters) const;
  // Whether attention mixes its tokens (and its cache holds keys and values).
  bool attends() const { return !recurrent; }

 private:
  // norm → attention → residual → norm → MLP → residual, with `attend`
  // the attention of the normed input.
  template <class Attend>
  mlx::core::array apply(const mlx::core::array& x, const RowAdapters& adapters,
                         Attend&& attend) const;
  size_t bytes_besides_feed_forward() const;
};

class DenseTransformer : public LanguageModel {
 public:
  DenseTransformer(TransformerSpec spec, WeightStore& weights,
                   const QuantizationConfig& quantization, const LoadOptions& options = {});
  // Its adapter sites point into its layers: it stays where it was built.
  DenseTransformer(const DenseTransformer&) = delete;
  DenseTransformer& operator=(const DenseTransformer&) = delete;

  mlx::core::array forward(const mlx::core::array& tokens, CacheList& caches,
                           const AdapterStack* adapters = nullptr) const override;
  mlx::core::array forward_batch(const mlx::core::array& tokens,
                                 const ForwardBatch& batch) const override;
  CacheList make_caches() const override;
  mlx::core::array training_forward(const mlx::core::array& tokens, const AdapterStack* adapters,
                                    const TrainingBlockRunner& run_block = {}) const override;
  mlx::core::array hidden_states(const mlx::core::array& tokens,
                                 const std::vector<int>& lengths = {}) const override;
  bool bidirectional() const override { return spec_.bidirectional; }
  std::shared_ptr<const BoundAdapter> bind_adapter(const AdapterFiles& files,
                                                   const std::string& name) const override;
  const AdapterSites& adapter_sites() const override { return adapter_sites_; }
  std::optional<std::string> adapter_training_refusal() const override;
  const std::string& model_type() const override { return spec_.model_type; }
  std::string tier() const override { return "generic"; }
  bool mixture_of_experts() const override { return spec_.moe.has_value(); }
  int vocab_size() const override { return spec_.vocab_size; }
  std::optional<std::string> quantized_kv_refusal(
      const KvQuantization& quantization) const override;
  size_t parameter_count() const override { return parameter_count_; }
  size_t weight_bytes_per_token() const override;
  size_t weight_bytes() const override;
  const TransformerSpec& spec() const { return spec_; }
  // Its cache's kind for layer `index`, empty.
  std::unique_ptr<KvCache> make_cache(std::size_t index) const;
  // Layers whose decode step runs as one fused node.
  int fused_layer_count() const;

 private:
  TransformerBlock load_block(WeightStore& weights, const QuantizationConfig& quantization,
                              int index) const;
  Mlp load_mlp(WeightStore& weights, const QuantizationConfig& quantization,
               const std::string& prefix) const;
  // The attention of block `index`.
  void load_attention(WeightStore& weights, const QuantizationConfig& quantization, int index,
                      TransformerBlock& block) const;
  // A block's q and k norms, per the spec's kind.
  void load_qk_norms(WeightStore& weights, const std::string& prefix, Attention& attention) const;

  // The scaled input embeddings of tokens [B, L] → [B, L, hidden].
  mlx::core::array embed(const mlx::core::array& tokens) const;
  // The final norm and the output head → logits.
  mlx::core::array head(const mlx::core::array& h, const RowAdapters& adapters) const;
  // The first attention layer of each kind asks its cache for the mask:
  // [global, sliding].
  std::pair<AttentionMask, AttentionMask> masks_of(const CacheList& caches, int length) const;

  TransformerSpec spec_;
  KernelMode kernels_;
  KernelMode expert_kernels_;  // the experts' decode matvecs (bit-exact either way)
  Embedding embed_tokens_;
  std::vector<TransformerBlock> layers_;
  // Per layer, its one-node decode step where it has one (fast kernels).
  std::vector<std::optional<FusedDecodeBlock>> fused_layers_;
  std::optional<Norm> final_norm_;
  std::optional<Linear> lm_head_;  // absent when tied
  AdapterSites adapter_sites_;     // every projection an adapter can change
  size_t parameter_count_ = 0;
};

}  // namespace mlx_cpp
