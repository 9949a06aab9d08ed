#pragma once
// The resolved shape of a dense decoder-only transformer: everything the
// generic graph (dense_transformer.h) needs, read from config.json by an
// architecture's builder (architectures.h). Plain data, no tensors.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp {

enum class NormStyle {
  weight,           // norm(x, w)
  one_plus_weight,  // norm(x, 1 + w): gemma, nemotron's LayerNorm1P
};

enum class NormKind {
  rms,    // mlx.fast.rms_norm
  layer,  // mlx.fast.layer_norm with the weight (and a bias where the config has one)
  // w * layer_norm(x) with no weight inside the kernel: cohere's and
  // stablelm's per-head q/k norms, whose weight is [heads, head_dim].
  layer_then_weight,
};

// The MLP's activation. In a gated MLP it acts on gate_proj(x) and is
// multiplied by up_proj(x); in a plain one it acts on up_proj(x).
enum class MlpActivation {
  silu,          // swiglu
  gelu_approx,   // gemma 2/3, phi
  gelu,          // the exact (erf) gelu: gemma, starcoder2
  relu_squared,  // nemotron
  xielu,         // apertus: four learned scalars per layer
};

// How a block joins its attention and MLP branches.
enum class BlockLayout {
  sequential,  // h = x + attn(norm(x)); out = h + mlp(norm(h))
  // One norm feeds both branches: (attn + mlp) + x (cohere, phi).
  parallel_branches_first,
  // One norm feeds both branches: (x + attn) + mlp (stablelm).
  parallel_residual_first,
};

// Which attention inputs are cast to float32 before attention (the
// result is cast back to the values' dtype).
enum class AttentionUpcast {
  none,
  queries,               // phi
  queries_and_keys,      // stablelm
  queries_when_float16,  // cohere2: float16 queries only
};

// Which implementation computes the ops: MLX's stock ops (bit-exact with
// mlx-lm) or mlx-cpp's own CPU kernels (faster, within a stated tolerance).
enum class KernelMode { stock, fast };

enum class TiedHead {
  tied,             // output projection = embedding
  untied,           // separate lm_head
  if_head_missing,  // tied iff the checkpoint has no lm_head (gemma3)
};

struct RopeConfig {
  float base = 10000.0f;
  bool traditional = false;
  nlohmann::json scaling;  // rope_scaling object or null
  // hunyuan: fast::rope gets base ** (arange(0, dims, 2) / dims) as its
  // frequency table instead of the base.
  bool base_as_frequencies = false;
  // phimoe: longrope's input scale given by the config (long_mscale).
  std::optional<float> input_scale;
};

// Llama 4's position-dependent query scaling (ministral3): queries times
// 1 + beta * log(1 + floor(position / original_max_position_embeddings)).
struct QueryPositionScale {
  double beta = 0.0;
  int original_max_position_embeddings = 1;
};

// A checkpoint whose tensors are named otherwise than llama's: each rule
// replaces the first occurrence of `from` in a tensor (and module) name,
// rules in order, before anything is loaded.
struct NameRewrite {
  std::string from, to;
};

std::string rewrite_name(const std::string& name, const std::vector<NameRewrite>& rules);

// A projection the checkpoint stores fused (glm4's mlp.gate_up_proj): its
// rows (output features) are split, in order, into the named parts. With
// groups > 1 the rows repeat the parts once per group (internlm2's wqkv:
// each key/value head's queries, key and value in turn), and each part
// gathers its rows from every group. Parts of one name join, in order
// (qwen3_next's in_proj_qkvz: per key head its queries, keys, values and
// gates; the queries, keys and values of all heads form in_proj_qkv).
struct FusedProjection {
  std::string fused;
  std::vector<std::pair<std::string, int>> parts;  // name, rows (per group)
  int groups = 1;
};

// How a mixture-of-experts router turns the gate's logits into each
// token's experts and their weights (mlx-lm's MoE blocks, as data).
enum class RouterScoring {
  softmax,           // softmax over every expert, then the top k (qwen2/3_moe, olmoe, ernie)
  softmax_of_top_k,  // the top k logits, then a softmax over them (mixtral, granitemoe)
  sigmoid,           // sigmoid of float32 logits, then the top k (glm4_moe, dots1, ernie)
  sparsemixer,       // phimoe: k rounds of argmax within a jitter band
};

// Which form of argpartition picks the top k: the slot order it leaves
// decides the order the weighted experts are summed in.
enum class TopKForm {
  lowest_of_negated,  // argpartition(-s, k - 1)[..., :k]
  highest,            // argpartition(s, -k)[..., -k:]
};

enum class TopKNormalization {
  none,
  by_sum,          // w / sum(w)
  by_floored_sum,  // w / maximum(sum(w), 1e-12) (ernie)
};

struct MoeSpec {
  int num_experts = 0;
  int top_k = 0;
  int intermediate_size = 0;  // per routed expert
  RouterScoring scoring = RouterScoring::softmax;
  // The scores are computed in float32 (ernie, glm4_moe, dots1; granitemoe
  // casts the selected logits).
  bool scores_in_float32 = false;
  bool precise_softmax = true;
  TopKForm top_k_form = TopKForm::lowest_of_negated;
  TopKNormalization normalization = TopKNormalization::none;
  std::optional<float> routed_scaling;  // weights times this (glm4_moe, dots1)
  // Selection adds mlp.gate.e_score_correction_bias to the scores; the
  // weights are still the scores (glm4_moe, dots1).
  bool selection_bias = false;
  // Grouped selection: only the experts of the top_k_groups groups with
  // the largest sums of their two best scores compete (glm4_moe, dots1).
  int groups = 1;
  int top_k_groups = 1;
  bool expert_bias = false;          // biases on the experts' projections (olmoe, ernie)
  int shared_intermediate_size = 0;  // 0: no shared experts
  bool shared_bias = false;
  bool shared_gate = false;          // qwen2_moe: sigmoid(shared_expert_gate(x)) * shared(x)
  double sparsemixer_jitter = 0.01;  // phimoe's router_jitter_noise
};

// What mixes a layer's tokens: attention over keys and values, lfm2's
// gated short convolution over the last few tokens, or qwen3_5's gated
// DeltaNet (a recurrent state instead of a growing cache, both).
enum class TokenMixer { attention, short_conv, gated_delta };

// lfm2's convolution layers: in_proj to three parts B, C, x; a depthwise
// causal convolution of B * x over `kernel_size` tokens; C times it; out_proj.
struct ShortConvSpec {
  int kernel_size = 3;  // conv_L_cache: the state keeps kernel_size - 1 tokens
  bool bias = false;    // on the projections and the convolution
};

// qwen3_5's linear-attention layers: in_proj_qkv through a depthwise causal
// convolution (silu) into queries and keys of key_heads and values of
// value_heads; the gated delta rule's recurrent state per value head
// [value_dim, key_dim]; an RMSNorm gated by silu(in_proj_z); out_proj.
struct GatedDeltaSpec {
  int key_heads = 0, value_heads = 0;
  int key_dim = 0, value_dim = 0;  // per head
  int kernel_size = 4;             // linear_conv_kernel_dim
};

struct TransformerSpec {
  std::string model_type;  // after remapping (mistral → llama, ...)
  int hidden_size = 0;
  int num_layers = 0;
  int intermediate_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  float norm_eps = 1e-5f;
  std::optional<int> max_position_embeddings;

  bool qkv_bias = false;
  bool output_bias = false;  // o_proj bias
  bool mlp_bias = false;
  bool qk_norm = false;                // per-head RMSNorm on q and k before rope
  bool attention_output_gate = false;  // qwen3_5: sigmoid(gate) of q_proj's second half
  bool sandwich_norms = false;         // gemma: post-attention and pre/post feed-forward norms
  bool sandwich_clip = true;           // gemma 3 clips float16 residual sums; glm4 adds plainly
  bool post_norms = false;  // olmo2: no input norm; the attention and MLP outputs are normed
  bool qk_norm_full_width = false;  // olmo2: q/k norms over the whole projection
  bool qk_norm_after_rope = false;  // hunyuan: the norms act on the rotated q/k
  NormKind qk_norm_kind = NormKind::rms;
  // stablelm stores one weight per head (q_layernorm.norms.N.weight),
  // stacked at load.
  bool qk_norm_weights_per_head = false;
  NormStyle norm_style = NormStyle::weight;
  NormKind norm_kind = NormKind::rms;
  bool norm_bias = false;  // LayerNorm with a bias
  MlpActivation activation = MlpActivation::silu;
  bool gated_mlp = true;  // gate_proj, up_proj, down_proj; else up_proj, down_proj
  BlockLayout layout = BlockLayout::sequential;
  AttentionUpcast attention_upcast = AttentionUpcast::none;
  // gemma2: attention logits become tanh(s / cap) * cap before the mask.
  std::optional<float> attention_softcap;
  std::optional<QueryPositionScale> query_position_scale;
  TiedHead tied_head = TiedHead::tied;
  bool head_bias = false;  // phi: lm_head has a bias
  float attention_scale = 1.0f;
  // gemma: embeddings are multiplied by sqrt(hidden_size), in the
  // activation dtype; gemma3 rounds the factor to bf16 first.
  std::optional<float> embedding_scale;
  bool embedding_scale_in_bf16 = false;
  // granite, minicpm: each block's attention and MLP outputs are multiplied
  // by this before their residual add.
  std::optional<float> residual_scale;
  // minicpm: the final hidden state is divided by this before the head.
  std::optional<float> head_input_divisor;
  // granite: the logits are divided by this.
  std::optional<float> logits_divisor;
  // cohere: the logits are multiplied by this.
  std::optional<float> logits_scale;
  // gemma2: the logits become tanh(logits / cap) * cap.
  std::optional<float> final_softcap;

  RopeConfig global_rope;
  std::optional<int> rotary_dims;      // partial rotary: the leading dims rotate (default all)
  RopeConfig local_rope;               // used by sliding-window layers
  std::vector<bool> layer_is_sliding;  // one entry per layer
  std::vector<bool> layer_uses_rope;   // one entry per layer (smollm3: some have none)
  std::optional<int> sliding_window;
  // An encoder (EmbeddingGemma): every token attends both ways, a sliding
  // layer to the tokens less than sliding_window away on either side. It
  // makes hidden states for embeddings (LanguageModel::hidden_states), not
  // text.
  bool bidirectional = false;

  // Hybrids (lfm2): each layer's token mixer; empty: attention throughout.
  std::vector<TokenMixer> layer_mixers;
  std::optional<ShortConvSpec> short_conv;
  std::optional<GatedDeltaSpec> gated_delta;

  // Mixture of experts: the routed MLP of the layers marked in
  // layer_is_moe (the others keep the dense MLP).
  std::optional<MoeSpec> moe;
  std::vector<bool> layer_is_moe;  // empty: none

  std::vector<NameRewrite> weight_names;             // checkpoint names -> llama's
  std::vector<FusedProjection> fused_projections;    // split at load, after the renames
  std::vector<std::string> ignored_weight_prefixes;  // tensors the model does not use (mimo's MTP)
};

}  // namespace mlx_cpp
