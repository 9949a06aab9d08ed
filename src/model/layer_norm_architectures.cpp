// The descriptor table's LayerNorm families: starcoder2, nemotron, the
// parallel blocks of cohere and phi, stablelm.
#include "io/error.h"
#include "model/architecture_fields.h"

namespace mlx_cpp::architecture {
namespace {

// LayerNorm with biases, biases on every projection, a plain exact-gelu MLP
// (c_fc, c_proj).
TransformerSpec starcoder2(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.required_int("hidden_size");
  spec.num_layers = config.required_int("num_hidden_layers");
  spec.intermediate_size = config.required_int("intermediate_size");
  spec.num_heads = config.required_int("num_attention_heads");
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.vocab_size = config.int_or("vocab_size", 49152);
  spec.norm_eps = float(config.number_or("norm_epsilon", 1e-5));
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = spec.output_bias = spec.mlp_bias = true;
  spec.norm_kind = NormKind::layer;
  spec.norm_bias = true;
  spec.gated_mlp = false;
  spec.activation = MlpActivation::gelu;
  spec.global_rope = {float(config.number_or("rope_theta", 100000)), false, nullptr};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  spec.weight_names = {{".mlp.c_fc.", ".mlp.up_proj."}, {".mlp.c_proj.", ".mlp.down_proj."}};
  finish_attention(spec);
  return spec;
}

// LayerNorm (1 + w) with biases, a plain relu² MLP, partial rotary with
// optional linear scaling.
TransformerSpec nemotron(const ConfigReader& config) {
  auto spec = fields_with_eps(config, "norm_eps");
  if (!config.has("hidden_act")) throw Error("config.json (model_type nemotron): no hidden_act");
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = head_dim_or_split(config, spec);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.mlp_bias = config.bool_or("mlp_bias", false);
  spec.norm_kind = NormKind::layer;
  spec.norm_style = NormStyle::one_plus_weight;
  spec.norm_bias = true;
  spec.gated_mlp = false;
  spec.activation = MlpActivation::relu_squared;
  const auto& scaling = config.object_or_null("rope_scaling");
  if (!scaling.is_null() && scaling.value("type", scaling.value("rope_type", "")) != "linear")
    throw Error("config.json (model_type nemotron): rope_scaling supports only type linear");
  spec.global_rope = {float(config.number_or("rope_theta", 10000)), false, scaling};
  spec.rotary_dims = rotary_dims_of(config, spec.head_dim, 0.5);
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  finish_attention(spec);
  return spec;
}

// cohere's defaults and names: LayerNorm, one norm before parallel
// attention and MLP branches, interleaved rope, a tied head whose logits
// are scaled.
TransformerSpec cohere_fields(const ConfigReader& config, int layers, int hidden, int ffn,
                              int heads, int kv_heads, double theta) {
  TransformerSpec spec;
  spec.hidden_size = config.int_or("hidden_size", hidden);
  spec.num_layers = config.int_or("num_hidden_layers", layers);
  spec.intermediate_size = config.int_or("intermediate_size", ffn);
  spec.num_heads = config.int_or("num_attention_heads", heads);
  spec.num_kv_heads = config.int_or("num_key_value_heads", kv_heads);
  spec.vocab_size = config.int_or("vocab_size", 256000);
  spec.norm_eps = float(config.number_or("layer_norm_eps", 1e-5));
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.norm_kind = NormKind::layer;
  spec.norm_bias = config.bool_or("layer_norm_bias", false);
  spec.layout = BlockLayout::parallel_branches_first;
  spec.global_rope = {float(config.number_or("rope_theta", theta)), true, nullptr};
  spec.tied_head = TiedHead::tied;
  spec.logits_scale = float(config.number_or("logit_scale", 0.0625));
  return spec;
}

// With optional per-head LayerNorms on q and k (weights [heads, head_dim]).
TransformerSpec cohere(const ConfigReader& config) {
  auto spec = cohere_fields(config, 40, 8192, 22528, 64, 64, 8000000.0);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qk_norm = config.bool_or("use_qk_norm", false);
  spec.qk_norm_kind = NormKind::layer_then_weight;
  finish_attention(spec);
  return spec;
}

// Sliding layers with rope, every sliding_window_pattern-th layer global
// without rotary positions; float16 queries attend in float32.
TransformerSpec cohere2(const ConfigReader& config) {
  auto spec = cohere_fields(config, 32, 4096, 14336, 32, 8, 50000.0);
  spec.head_dim = config.int_or("head_dim", 128);
  if (spec.head_dim * spec.num_heads != spec.hidden_size)
    throw Error("config.json (model_type cohere2): hidden_size must be head_dim * heads");
  spec.attention_upcast = AttentionUpcast::queries_when_float16;
  finish_attention(spec);
  const int pattern = config.int_or("sliding_window_pattern", 4);
  for (int i = 0; i < spec.num_layers; ++i)
    spec.layer_is_sliding[i] = spec.layer_uses_rope[i] = (i + 1) % pattern != 0;
  spec.sliding_window = config.int_or("sliding_window", 4096);
  return spec;
}

// LayerNorm with biases, partial rotary, optional parallel residual and
// per-head q/k LayerNorms (one tensor per head), queries and keys in
// float32 for attention, an untied head.
TransformerSpec stablelm(const ConfigReader& config) {
  auto spec = fields_with_eps(config, "layer_norm_eps");
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = config.required_bool("use_qkv_bias");
  spec.norm_kind = NormKind::layer;
  spec.norm_bias = true;
  if (config.bool_or("use_parallel_residual", false))
    spec.layout = BlockLayout::parallel_residual_first;
  spec.qk_norm = config.bool_or("qk_layernorm", false);
  spec.qk_norm_kind = NormKind::layer_then_weight;
  spec.qk_norm_weights_per_head = true;
  spec.attention_upcast = AttentionUpcast::queries_and_keys;
  spec.global_rope = {float(config.required_number("rope_theta")), false, nullptr};
  spec.rotary_dims = int(config.required_number("partial_rotary_factor") * spec.head_dim);
  spec.tied_head = TiedHead::untied;
  spec.weight_names = {{".self_attn.q_layernorm.", ".self_attn.q_norm."},
                       {".self_attn.k_layernorm.", ".self_attn.k_norm."}};
  finish_attention(spec);
  spec.attention_scale = sqrt_of_inverse(spec.head_dim);
  return spec;
}

// LayerNorm with biases before parallel branches, a plain gelu_approx MLP
// (fc1, fc2), partial rotary, float32 queries, an lm_head with a bias.
TransformerSpec phi(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.int_or("hidden_size", 2560);
  spec.num_layers = config.int_or("num_hidden_layers", 32);
  spec.intermediate_size = config.int_or("intermediate_size", 10240);
  spec.num_heads = config.int_or("num_attention_heads", 32);
  spec.num_kv_heads = config.int_or("num_key_value_heads", spec.num_heads);
  spec.vocab_size = config.int_or("vocab_size", 51200);
  spec.norm_eps = float(config.number_or("layer_norm_eps", 1e-5));
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 2048);
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = spec.output_bias = spec.mlp_bias = spec.head_bias = true;
  spec.norm_kind = NormKind::layer;
  spec.norm_bias = true;
  spec.layout = BlockLayout::parallel_branches_first;
  spec.gated_mlp = false;
  spec.activation = MlpActivation::gelu_approx;
  spec.attention_upcast = AttentionUpcast::queries;
  spec.global_rope = {float(config.number_or("rope_theta", 10000)), false, nullptr};
  spec.rotary_dims = rotary_dims_of(config, spec.head_dim, 0.4);
  spec.tied_head = TiedHead::untied;
  spec.weight_names = {{".self_attn.dense.", ".self_attn.o_proj."},
                       {".mlp.fc1.", ".mlp.up_proj."},
                       {".mlp.fc2.", ".mlp.down_proj."},
                       {"model.final_layernorm.", "model.norm."}};
  finish_attention(spec);
  spec.attention_scale = sqrt_of_inverse(spec.head_dim);
  return spec;
}

}  // namespace

const BuilderTable& layer_norm_builders() {
  static const BuilderTable builders = {{"starcoder2", starcoder2}, {"nemotron", nemotron},
                                        {"cohere", cohere},         {"cohere2", cohere2},
                                        {"stablelm", stablelm},     {"phi", phi}};
  return builders;
}

}  // namespace mlx_cpp::architecture
