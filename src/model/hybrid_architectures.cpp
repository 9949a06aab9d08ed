// The descriptor table's hybrids: layers that mix tokens otherwise than by
// attention (TokenMixer) beside attention layers, with the dense block
// around both.
#include <algorithm>

#include "io/error.h"
#include "model/architecture_fields.h"

namespace mlx_cpp::architecture {
namespace {

// lfm2's feed-forward width: with block_auto_adjust_ff_dim, two thirds of
// the configured width, times the multiplier, rounded up to a multiple of
// block_multiple_of (Python's int() truncations, as mlx-lm's MLP does).
int lfm2_ff_dim(const ConfigReader& config) {
  int ff_dim = config.has("block_ff_dim") ? config.required_int("block_ff_dim")
                                          : config.required_int("intermediate_size");
  if (config.required_bool("block_auto_adjust_ff_dim")) {
    ff_dim = static_cast<int>(2.0 * ff_dim / 3.0);
    if (config.has("block_ffn_dim_multiplier"))
      ff_dim = static_cast<int>(config.required_number("block_ffn_dim_multiplier") * ff_dim);
    const int multiple = config.required_int("block_multiple_of");
    if (multiple < 1) throw Error("config.json: block_multiple_of must be at least 1");
    ff_dim = multiple * ((ff_dim + multiple - 1) / multiple);
  }
  return ff_dim;
}

// Which layers attend: full_attn_idxs, else the layer_types marked
// "full_attention"; the others are short convolutions.
std::vector<TokenMixer> lfm2_mixers(const ConfigReader& config, int layers) {
  std::vector<TokenMixer> mixers(layers, TokenMixer::short_conv);
  if (config.has("full_attn_idxs")) {
    const auto& indices = config.value("full_attn_idxs");
    if (!indices.is_array()) throw Error("config.json: full_attn_idxs must list layer indices");
    for (const auto& index : indices) {
      if (!index.is_number_integer() || index.get<int64_t>() < 0 || index.get<int64_t>() >= layers)
        throw Error("config.json: full_attn_idxs holds " + index.dump() + ", not a layer of " +
                    std::to_string(layers));
      mixers[index.get<int>()] = TokenMixer::attention;
    }
  } else if (config.has("layer_types")) {
    const auto& types = per_layer(config, "layer_types", layers, "type");
    for (int i = 0; i < layers; ++i)
      if (types[i] == "full_attention") mixers[i] = TokenMixer::attention;
  } else {
    throw Error(
        "config.json (model_type lfm2): full_attn_idxs or layer_types must say which "
        "layers attend");
  }
  return mixers;
}

// Liquid's LFM2: short gated convolutions in most layers, attention with
// per-head q/k norms in the rest, a swiglu MLP under its own names, a tied
// head behind model.embedding_norm.
TransformerSpec lfm2(const ConfigReader& config) {
  auto spec = fields_besides_feed_forward(config, "norm_eps");
  if (config.required_int("block_dim") != spec.hidden_size)
    throw Error("config.json: block_dim " + std::to_string(config.required_int("block_dim")) +
                " differs from hidden_size " + std::to_string(spec.hidden_size));
  spec.intermediate_size = lfm2_ff_dim(config);
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qk_norm = true;
  double theta = config.number_or("rope_theta", 1000000.0);
  const auto& parameters = config.object_or_null("rope_parameters");
  if (parameters.is_object() && parameters.contains("rope_theta"))
    theta = parameters["rope_theta"].get<double>();
  spec.global_rope = {float(theta), false, nullptr};
  spec.tied_head = TiedHead::tied;
  spec.layer_mixers = lfm2_mixers(config, spec.num_layers);
  const int kernel_size = config.required_int("conv_L_cache");
  if (kernel_size < 2) throw Error("config.json: conv_L_cache must be at least 2");
  spec.short_conv = ShortConvSpec{kernel_size, config.required_bool("conv_bias")};
  spec.weight_names = {{".self_attn.out_proj.", ".self_attn.o_proj."},
                       {".self_attn.q_layernorm.", ".self_attn.q_norm."},
                       {".self_attn.k_layernorm.", ".self_attn.k_norm."},
                       {".feed_forward.w1.", ".mlp.gate_proj."},
                       {".feed_forward.w3.", ".mlp.up_proj."},
                       {".feed_forward.w2.", ".mlp.down_proj."},
                       {".operator_norm.", ".input_layernorm."},
                       {".ffn_norm.", ".post_attention_layernorm."},
                       {"model.embedding_norm.", "model.norm."}};
  finish_attention(spec);
  return spec;
}

// Qwen 3.5 (and qwen3_5_moe, with routed experts and a gated shared
// expert in every layer): gated DeltaNet layers, every full_attention_interval-th layer
// attention instead (per-head q/k norms, partial rope, an output gate from
// the second half of q_proj), a swiglu MLP. Rope comes from
// rope_parameters, with mlx-lm's defaults (theta 100000, a quarter of
// each head rotating) when the config has none.
TransformerSpec qwen3_5(const ConfigReader& config) {
  const int experts = config.has("num_experts") ? config.required_int("num_experts") : 0;
  auto spec =
      experts > 0 ? fields_besides_feed_forward(config, "rms_norm_eps") : common_fields(config);
  spec.num_kv_heads = config.int_or("num_key_value_heads", 8);
  spec.head_dim = config.int_or("head_dim", spec.hidden_size / spec.num_heads);
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 131072);
  spec.qk_norm = true;
  spec.attention_output_gate = true;
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  nlohmann::json parameters = {{"type", "default"},
                               {"mrope_section", {11, 11, 10}},
                               {"rope_theta", 100000},
                               {"partial_rotary_factor", 0.25}};
  if (config.has("rope_parameters")) parameters = config.object_or_null("rope_parameters");
  double theta = config.number_or("rope_theta", 100000.0);
  double partial = config.number_or("partial_rotary_factor", 0.25);
  nlohmann::json scaling = config.object_or_null("rope_scaling");
  if (parameters.is_object() && !parameters.empty()) {
    if (!parameters.contains("type") && parameters.contains("rope_type"))
      parameters["type"] = parameters["rope_type"];
    theta = parameters.value("rope_theta", 100000.0);
    partial = parameters.value("partial_rotary_factor", 0.25);
    scaling = parameters;
  }
  spec.global_rope = {float(theta), false, scaling};
  spec.rotary_dims = int(spec.head_dim * partial);
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));

  const int interval = config.int_or("full_attention_interval", 4);  // int_or: positive
  spec.layer_mixers.assign(spec.num_layers, TokenMixer::gated_delta);
  for (int i = interval - 1; i < spec.num_layers; i += interval)
    spec.layer_mixers[i] = TokenMixer::attention;
  GatedDeltaSpec delta;
  delta.key_heads = config.int_or("linear_num_key_heads", 16);
  delta.value_heads = config.int_or("linear_num_value_heads", 64);
  delta.key_dim = config.int_or("linear_key_head_dim", 192);
  delta.value_dim = config.int_or("linear_value_head_dim", 128);
  delta.kernel_size = config.int_or("linear_conv_kernel_dim", 4);
  if (delta.value_heads % delta.key_heads != 0)
    throw Error("config.json: linear_num_value_heads " + std::to_string(delta.value_heads) +
                " is not a multiple of linear_num_key_heads " + std::to_string(delta.key_heads));
  if (delta.kernel_size < 2) throw Error("config.json: linear_conv_kernel_dim must be at least 2");
  spec.gated_delta = delta;
  // The multimodal wrapper's text stack ("language_model." is stripped at
  // load); its multi-token-prediction layers are not loaded.
  spec.ignored_weight_prefixes = {"mtp."};
  finish_attention(spec);
  if (experts > 0) {  // qwen3_5_moe: qwen3_next's sparse block in every layer
    auto moe = shared_expert_moe(config);
    moe.top_k_form = TopKForm::highest;
    if (config.bool_or("norm_topk_prob", true)) moe.normalization = TopKNormalization::by_sum;
    every_layer_moe(spec, moe);
    spec.weight_names = {{".mlp.shared_expert.", ".mlp.shared_experts."}};
  }
  return spec;
}

// Qwen3-Next: qwen3_5_moe's layers, but the gated DeltaNet's input
// projections fused per key head (in_proj_qkvz: each key head's queries,
// keys, its value heads' values and gates; in_proj_ba: their b then a),
// split at load into qwen3_5's projections; dense MLPs in mlp_only_layers
// and between decoder_sparse_step; top-k weights renormalised only with
// norm_topk_prob (off by default).
TransformerSpec qwen3_next(const ConfigReader& config) {
  auto spec = qwen3_5(config);
  spec.intermediate_size = config.required_int("intermediate_size");
  if (!spec.moe) throw Error("config.json (model_type qwen3_next): num_experts must be positive");
  spec.moe->normalization =
      config.bool_or("norm_topk_prob", false) ? TopKNormalization::by_sum : TopKNormalization::none;
  moe_by_sparse_step(spec, config);
  const auto& delta = *spec.gated_delta;
  const int values_per_key_head = delta.value_heads / delta.key_heads;
  spec.fused_projections = {
      {"in_proj_qkvz",
       {{"in_proj_qkv", delta.key_dim},
        {"in_proj_qkv", delta.key_dim},
        {"in_proj_qkv", values_per_key_head * delta.value_dim},
        {"in_proj_z", values_per_key_head * delta.value_dim}},
       delta.key_heads},
      {"in_proj_ba",
       {{"in_proj_b", values_per_key_head}, {"in_proj_a", values_per_key_head}},
       delta.key_heads}};
  return spec;
}

}  // namespace

const BuilderTable& hybrid_builders() {
  // qwen3_5_text: the text_config's model_type, which wins when a
  // multimodal config is flattened.
  static const BuilderTable builders = {
      {"lfm2", lfm2},           {"qwen3_5", qwen3_5},          {"qwen3_5_text", qwen3_5},
      {"qwen3_5_moe", qwen3_5}, {"qwen3_5_moe_text", qwen3_5}, {"qwen3_next", qwen3_next}};
  return builders;
}

}  // namespace mlx_cpp::architecture
