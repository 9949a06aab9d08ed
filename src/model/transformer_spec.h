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
  weight,           // rms_norm(x, w)
  one_plus_weight,  // rms_norm(x, 1 + w), gemma
};

enum class GatedActivation {
  silu,         // swiglu: silu(gate) * up
  gelu_approx,  // gelu_approx(gate) * up, gemma 2/3
  gelu,         // gelu(gate) * up with the exact (erf) gelu, gemma
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
};

// A checkpoint whose tensors are named otherwise than llama's: each rule
// replaces the first occurrence of `from` in a tensor (and module) name,
// rules in order, before anything is loaded.
struct NameRewrite {
  std::string from, to;
};

std::string rewrite_name(const std::string& name, const std::vector<NameRewrite>& rules);

// A projection the checkpoint stores fused (glm4's mlp.gate_up_proj): its
// rows (output features) are split, in order, into the named parts.
struct FusedProjection {
  std::string fused;
  std::vector<std::pair<std::string, int>> parts;  // name, rows
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
  bool qk_norm = false;         // per-head RMSNorm on q and k before rope
  bool sandwich_norms = false;  // gemma: post-attention and pre/post feed-forward norms
  bool sandwich_clip = true;    // gemma 3 clips float16 residual sums; glm4 adds plainly
  bool post_norms = false;      // olmo2: no input norm; the attention and MLP outputs are normed
  bool qk_norm_full_width = false;  // olmo2: q/k norms over the whole projection
  NormStyle norm_style = NormStyle::weight;
  GatedActivation activation = GatedActivation::silu;
  TiedHead tied_head = TiedHead::tied;
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

  RopeConfig global_rope;
  std::optional<int> rotary_dims;      // partial rotary: the leading dims rotate (default all)
  RopeConfig local_rope;               // used by sliding-window layers
  std::vector<bool> layer_is_sliding;  // one entry per layer
  std::vector<bool> layer_uses_rope;   // one entry per layer (smollm3: some have none)
  std::optional<int> sliding_window;

  std::vector<NameRewrite> weight_names;             // checkpoint names -> llama's
  std::vector<FusedProjection> fused_projections;    // split at load, after the renames
  std::vector<std::string> ignored_weight_prefixes;  // tensors the model does not use (mimo's MTP)
};

}  // namespace mlx_cpp
