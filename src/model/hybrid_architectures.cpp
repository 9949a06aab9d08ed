// The descriptor table's hybrids: layers that mix tokens otherwise than by
// attention (TokenMixer) beside attention layers, with the dense block
// around both.
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

}  // namespace

const BuilderTable& hybrid_builders() {
  static const BuilderTable builders = {{"lfm2", lfm2}};
  return builders;
}

}  // namespace mlx_cpp::architecture
