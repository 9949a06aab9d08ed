#pragma once
// Gemma 4's text stack as its config.json shapes it (mlx-lm's gemma4_text
// ModelArgs, defaults included): which layers slide, each layer's attention
// width, which layers reuse an earlier layer's keys and values, the
// per-layer input embeddings and the optional experts. Plain data, no
// tensors; the graph is model/gemma4_text.h.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/config_reader.h"

namespace mlx_cpp {

struct Gemma4Layer {
  bool sliding = false;
  int head_dim = 0;
  int kv_heads = 0;
  // Full-attention layers of the larger models: the keys' projection gives
  // the values too (attention_k_eq_v); there is no v_proj.
  bool keys_are_values = false;
  // The last num_kv_shared_layers layers keep no cache: each attends over
  // the keys and values of the last earlier layer of its kind, `kv_source`.
  bool owns_kv = true;
  int kv_source = 0;          // this layer's index when it owns its keys
  int intermediate_size = 0;  // doubled in the shared layers (use_double_wide_mlp)
};

// The mixture of experts beside the dense MLP (enable_moe_block).
struct Gemma4Experts {
  int num_experts = 0;
  int top_k = 0;
  int intermediate_size = 0;
};

struct Gemma4Config {
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_heads = 0;
  int vocab_size = 0;
  int vocab_size_per_layer_input = 0;
  // Width of each layer's input embedding (hidden_size_per_layer_input);
  // 0: none (the larger models).
  int per_layer_input_size = 0;
  float norm_eps = 1e-6f;
  int sliding_window = 512;
  std::optional<int> max_position_embeddings;
  std::optional<float> final_softcap;
  bool tied_head = true;
  bool rope_traditional = false;
  // rope_parameters of each kind of layer (an object, possibly empty).
  nlohmann::json sliding_rope, full_rope;
  std::vector<Gemma4Layer> layers;
  // Layers from here on attend over earlier layers' keys; the caches are
  // those of the layers before it.
  int first_shared_layer = 0;
  std::optional<Gemma4Experts> experts;
};

// Reads config.json (after read_model_config flattened a gemma4 wrapper's
// text_config); throws Error naming a missing or inconsistent field.
Gemma4Config read_gemma4_config(const ConfigReader& config);

}  // namespace mlx_cpp
