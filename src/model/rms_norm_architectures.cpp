// The descriptor table's RMSNorm families: llama and the models that
// differ from it by data (biases, norms, rope variants, scales, names).
#include <cmath>

#include "io/error.h"
#include "model/architecture_fields.h"

namespace mlx_cpp::architecture {
namespace {

TransformerSpec llama(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = config.int_or("head_dim", spec.hidden_size / spec.num_heads);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.mlp_bias = config.bool_or("mlp_bias", false);
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  finish_attention(spec);
  sliding_layers_from_layer_types(config, spec);
  return spec;
}

// llama with some layers that have no rotary positions (NoPE): the config's
// no_rope_layers (1 = rope), or every no_rope_layer_interval-th layer.
TransformerSpec smollm3(const ConfigReader& config) {
  auto spec = llama(config);
  if (config.has("no_rope_layers")) {
    const auto& flags = per_layer(config, "no_rope_layers", spec.num_layers, "flag");
    for (int i = 0; i < spec.num_layers; ++i) spec.layer_uses_rope[i] = flags[i] != 0;
  } else {
    const int interval = config.int_or("no_rope_layer_interval", 4);
    if (interval < 1) throw Error("config.json: no_rope_layer_interval must be at least 1");
    for (int i = 0; i < spec.num_layers; ++i) spec.layer_uses_rope[i] = (i + 1) % interval != 0;
  }
  return spec;
}

// llama with traditional (interleaved) rope, q/k/v biases but none on o_proj.
TransformerSpec helium(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = config.required_bool("attention_bias");
  spec.mlp_bias = config.required_bool("mlp_bias");
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.global_rope = {float(config.required_number("rope_theta")), true, nullptr};
  spec.tied_head = tied_if(config.required_bool("tie_word_embeddings"));
  finish_attention(spec);
  return spec;
}

// The first gemma: (1 + w) norms, exact gelu, embeddings times sqrt(hidden)
// in the activation dtype, a tied head, plain rope.
TransformerSpec gemma(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.norm_style = NormStyle::one_plus_weight;
  spec.activation = MlpActivation::gelu;
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false), nullptr};
  spec.embedding_scale = static_cast<float>(std::sqrt(double(spec.hidden_size)));
  spec.tied_head = TiedHead::tied;
  finish_attention(spec);
  return spec;
}

// llama under other names: num_layers, layer_norm_epsilon, GPT-2 style
// tensor names (transformer.h.N.attn.attention.out_proj, mlp.c_fc_0, ...).
TransformerSpec exaone(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.required_int("hidden_size");
  spec.num_layers = config.required_int("num_layers");
  spec.intermediate_size = config.required_int("intermediate_size");
  spec.num_heads = config.required_int("num_attention_heads");
  spec.vocab_size = config.required_int("vocab_size");
  spec.norm_eps = static_cast<float>(config.required_number("layer_norm_epsilon"));
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.int_or("head_dim", spec.hidden_size / spec.num_heads);
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.mlp_bias = config.bool_or("mlp_bias", false);
  spec.global_rope = {float(config.required_number("rope_theta")),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  spec.weight_names = {{"transformer.wte.", "model.embed_tokens."},
                       {"transformer.ln_f.", "model.norm."},
                       {"transformer.h.", "model.layers."},
                       {".ln_1.", ".input_layernorm."},
                       {".ln_2.", ".post_attention_layernorm."},
                       {".attn.attention.out_proj.", ".self_attn.o_proj."},
                       {".attn.attention.", ".self_attn."},
                       {".mlp.c_fc_0.", ".mlp.gate_proj."},
                       {".mlp.c_fc_1.", ".mlp.up_proj."},
                       {".mlp.c_proj.", ".mlp.down_proj."}};
  finish_attention(spec);
  return spec;
}

// llama with separate switches for the q/k/v and the output biases.
TransformerSpec seed_oss(const ConfigReader& config) {
  auto spec = llama(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.qkv_bias = config.bool_or("attention_bias", false);
  spec.output_bias = config.bool_or("attention_out_bias", false);
  finish_attention(spec);
  return spec;
}

TransformerSpec granite(const ConfigReader& config) {
  auto spec = granite_fields(config);
  spec.mlp_bias = config.required_bool("mlp_bias");
  return spec;
}

// llama with µP scales: embeddings times scale_emb, residual branches times
// scale_depth / sqrt(layers), and (untied) the hidden state divided by
// hidden / dim_model_base before the head. A checkpoint without lm_head
// uses the embedding, as mlx-lm's sanitize copies it.
TransformerSpec minicpm(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.global_rope = {float(config.number_or("rope_theta", 1000000)),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  finish_attention(spec);
  spec.embedding_scale = float(config.required_number("scale_emb"));
  spec.residual_scale =
      float(config.required_number("scale_depth") / std::sqrt(double(spec.num_layers)));
  if (config.bool_or("tie_word_embeddings", false)) {
    spec.tied_head = TiedHead::tied;
  } else {
    spec.tied_head = TiedHead::if_head_missing;
    spec.head_input_divisor =
        float(double(spec.hidden_size) / config.required_number("dim_model_base"));
  }
  return spec;
}

// llama with a post-norm block (the attention and MLP outputs are normed,
// the input is not) and q/k RMSNorms over the whole projections.
TransformerSpec olmo2(const ConfigReader& config) {
  auto spec = llama(config);
  spec.qk_norm = spec.qk_norm_full_width = spec.post_norms = true;
  return spec;
}

// olmo2's block with sliding-window layers (every layer but each fourth,
// unless layer_types says): they use plain rope, the full layers the
// configured scaling.
TransformerSpec olmo3(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = head_dim_or_split(config, spec);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  const float base = float(config.required_number("rope_theta"));
  spec.global_rope = {base, false, config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  finish_attention(spec);
  spec.local_rope = {base, false, nullptr};
  spec.sliding_window = config.required_int("sliding_window");
  if (config.has("layer_types")) {
    const auto& types = per_layer(config, "layer_types", spec.num_layers, "type");
    for (int i = 0; i < spec.num_layers; ++i)
      spec.layer_is_sliding[i] = types[i] != "full_attention";
  } else {
    for (int i = 0; i < spec.num_layers; ++i) spec.layer_is_sliding[i] = (i + 1) % 4 != 0;
  }
  spec.qk_norm = spec.qk_norm_full_width = spec.post_norms = true;
  return spec;
}

// olmo2's post-norm block with per-head q/k norms; with a
// sliding_window_pattern ("LLLG"), L layers slide and G layers attend to
// everything without rotary positions.
TransformerSpec exaone4(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.global_rope = {float(config.required_number("rope_theta")), false,
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.required_bool("tie_word_embeddings"));
  finish_attention(spec);
  spec.qk_norm = spec.post_norms = true;
  const auto& pattern = config.value("sliding_window_pattern");
  if (pattern.is_string() && !pattern.get<std::string>().empty()) {
    const auto text = pattern.get<std::string>();
    for (int i = 0; i < spec.num_layers; ++i)
      spec.layer_is_sliding[i] = spec.layer_uses_rope[i] = text[i % text.size()] == 'L';
    spec.sliding_window = config.required_int("sliding_window");
  }
  return spec;
}

// Sandwich norms with plain adds under glm's names, a fused gate_up_proj,
// partial interleaved rope, q/k/v biases, always an lm_head.
TransformerSpec glm4(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.qkv_bias = config.required_bool("attention_bias");
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.global_rope = {float(config.required_number("rope_theta")),
                      config.bool_or("rope_traditional", true), nullptr};
  spec.rotary_dims = int(spec.head_dim * config.required_number("partial_rotary_factor"));
  spec.tied_head = TiedHead::untied;
  spec.sandwich_norms = true;
  spec.sandwich_clip = false;
  spec.weight_names = {{".post_attention_layernorm.", ".pre_feedforward_layernorm."},
                       {".post_self_attn_layernorm.", ".post_attention_layernorm."},
                       {".post_mlp_layernorm.", ".post_feedforward_layernorm."}};
  spec.fused_projections = {
      {"gate_up_proj",
       {{"gate_proj", spec.intermediate_size}, {"up_proj", spec.intermediate_size}}}};
  finish_attention(spec);
  return spec;
}

TransformerSpec qwen2(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = true;
  spec.global_rope = {float(config.number_or("rope_theta", 1000000)),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  finish_attention(spec);
  return spec;
}

// qwen2 with other defaults; its multi-token-prediction layers are unused.
TransformerSpec mimo(const ConfigReader& config) {
  auto spec = qwen2(config);
  spec.global_rope.base = float(config.number_or("rope_theta", 10000));
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  spec.ignored_weight_prefixes = {"model.mtp_layers."};
  return spec;
}

// EmbeddingGemma: gemma3_text as an encoder, transcribed from transformers'
// Gemma3TextModel (mlx-lm has no encoder to follow): a sliding layer sees
// the tokens less than sliding_window / 2 + 1 away on both sides, and the
// embedding factor stays in the weights' dtype (no bfloat16 rounding).
void bidirectional_gemma3(const ConfigReader& config, TransformerSpec& spec) {
  spec.bidirectional = true;
  spec.embedding_scale_in_bf16 = false;
  sliding_layers_from_layer_types(config, spec);
  spec.sliding_window = spec.sliding_window.value_or(512) / 2 + 1;
}

TransformerSpec gemma3_text(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.int_or("hidden_size", 1152);
  spec.num_layers = config.int_or("num_hidden_layers", 26);
  spec.intermediate_size = config.int_or("intermediate_size", 6912);
  spec.num_heads = config.int_or("num_attention_heads", 4);
  spec.head_dim = config.int_or("head_dim", 256);
  spec.norm_eps = float(config.number_or("rms_norm_eps", 1e-6));
  spec.vocab_size = config.int_or("vocab_size", 262144);
  spec.num_kv_heads = config.int_or("num_key_value_heads", 1);
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.qk_norm = spec.sandwich_norms = true;
  spec.norm_style = NormStyle::one_plus_weight;
  spec.activation = MlpActivation::gelu_approx;
  spec.tied_head = TiedHead::if_head_missing;
  spec.global_rope = {float(config.number_or("rope_theta", 1000000)), false,
                      config.object_or_null("rope_scaling")};
  finish_attention(spec);
  spec.attention_scale = inverse_sqrt(config.number_or("query_pre_attn_scalar", 256));
  spec.local_rope = {float(config.number_or("rope_local_base_freq", 10000)), false, nullptr};
  spec.embedding_scale = static_cast<float>(std::sqrt(double(spec.hidden_size)));
  spec.embedding_scale_in_bf16 = true;
  spec.sliding_window = config.int_or("sliding_window", 512);
  int pattern = config.int_or("sliding_window_pattern", 6);
  spec.layer_is_sliding.resize(spec.num_layers);
  for (int i = 0; i < spec.num_layers; ++i) spec.layer_is_sliding[i] = (i + 1) % pattern != 0;
  if (config.bool_or("use_bidirectional_attention", false)) bidirectional_gemma3(config, spec);
  return spec;
}

// gemma with sandwich norms (plain adds), gelu_approx, attention logits
// and final logits capped by tanh, the attention scale from
// query_pre_attn_scalar; every layer attends to everything, as mlx-lm's
// module does.
TransformerSpec gemma2(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.norm_style = NormStyle::one_plus_weight;
  spec.activation = MlpActivation::gelu_approx;
  spec.sandwich_norms = true;
  spec.sandwich_clip = false;
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false), nullptr};
  spec.embedding_scale = static_cast<float>(std::sqrt(double(spec.hidden_size)));
  spec.tied_head = TiedHead::tied;
  finish_attention(spec);
  spec.attention_scale =
      static_cast<float>(1.0 / std::pow(config.number_or("query_pre_attn_scalar", 144.0), 0.5));
  spec.attention_softcap = float(config.number_or("attn_logit_softcapping", 50.0));
  spec.final_softcap = float(config.number_or("final_logit_softcapping", 30.0));
  return spec;
}

// Fused qkv_proj and gate_up_proj split at load, partial rotary, longrope
// over the top-level original_max_position_embeddings.
TransformerSpec phi3(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 131072);
  nlohmann::json scaling = config.object_or_null("rope_scaling");
  if (!scaling.is_null()) {
    if (!scaling.contains("long_factor") || !scaling.contains("type"))
      throw Error("config.json (model_type phi3): rope_scaling needs long_factor and type");
    const auto type = scaling["type"].is_string() ? scaling["type"].get<std::string>() : "";
    if (type == "longrope" || type == "su")
      scaling["original_max_position_embeddings"] =
          config.int_or("original_max_position_embeddings", 4096);
    else if (type != "linear")
      scaling = nullptr;  // mlx-lm warns and runs without scaling
  }
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false), scaling};
  spec.rotary_dims = rotary_dims_of(config, spec.head_dim, 1.0);
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  const int q_rows = spec.num_heads * spec.head_dim, kv_rows = spec.num_kv_heads * spec.head_dim;
  spec.fused_projections = {
      {"qkv_proj", {{"q_proj", q_rows}, {"k_proj", kv_rows}, {"v_proj", kv_rows}}},
      {"gate_up_proj",
       {{"gate_proj", spec.intermediate_size}, {"up_proj", spec.intermediate_size}}}};
  finish_attention(spec);
  return spec;
}

// rope_scaling of type linear or dynamic, the only ones internlm accepts.
nlohmann::json internlm_rope_scaling(const ConfigReader& config, const char* type_key) {
  const auto& scaling = config.object_or_null("rope_scaling");
  if (scaling.is_null()) return scaling;
  const auto type = scaling.value(type_key, nlohmann::json()).is_string()
                        ? scaling[type_key].get<std::string>()
                        : std::string();
  if (!scaling.contains("factor") || (type != "linear" && type != "dynamic"))
    throw Error(std::string("config.json: rope_scaling needs a factor and ") + type_key +
                " linear or dynamic");
  return scaling;
}

// llama under internlm's names with a fused wqkv whose rows go per key/value
// head (its queries, then its key, then its value), one bias switch for
// the attention, linear or dynamic rope.
TransformerSpec internlm2(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.qkv_bias = spec.output_bias = config.bool_or("bias", true);
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false),
                      internlm_rope_scaling(config, "type")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  finish_attention(spec);
  spec.weight_names = {{"model.tok_embeddings.", "model.embed_tokens."},
                       {".attention.wqkv.", ".self_attn.wqkv."},
                       {".attention.wo.", ".self_attn.o_proj."},
                       {".feed_forward.w1.", ".mlp.gate_proj."},
                       {".feed_forward.w3.", ".mlp.up_proj."},
                       {".feed_forward.w2.", ".mlp.down_proj."},
                       {".attention_norm.", ".input_layernorm."},
                       {".ffn_norm.", ".post_attention_layernorm."},
                       {"output.", "lm_head."}};
  const int group = spec.num_heads / spec.num_kv_heads;
  spec.fused_projections = {
      {"wqkv",
       {{"q_proj", group * spec.head_dim}, {"k_proj", spec.head_dim}, {"v_proj", spec.head_dim}},
       spec.num_kv_heads}};
  return spec;
}

// llama with bias switches for attention (qkv_bias, all four projections)
// and the MLP (bias), linear or dynamic rope.
TransformerSpec internlm3(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.qkv_bias = spec.output_bias = config.bool_or("qkv_bias", false);
  spec.mlp_bias = config.bool_or("bias", false);
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false),
                      internlm_rope_scaling(config, "rope_type")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  finish_attention(spec);
  return spec;
}

// Per-head q/k RMSNorms after rope, and an NTK-alpha rope given as a
// frequency table.
TransformerSpec hunyuan_v1_dense(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = head_dim_or_split(config, spec);
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 32768);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.qk_norm = config.bool_or("use_qk_norm", true);
  spec.qk_norm_after_rope = true;
  const auto& scaling = config.object_or_null("rope_scaling");
  double alpha = 1.0;
  if (!scaling.is_null()) {
    if (!scaling.contains("alpha") || !scaling.contains("factor") || !scaling.contains("type"))
      throw Error(
          "config.json (model_type hunyuan_v1_dense): rope_scaling needs alpha, factor "
          "and type");
    if (!scaling["alpha"].is_number())
      throw Error("config.json (model_type hunyuan_v1_dense): rope_scaling alpha must be a number");
    alpha = scaling["alpha"].get<double>();
  }
  const double dims = spec.head_dim;
  const double base = config.number_or("rope_theta", 10000) * std::pow(alpha, dims / (dims - 2));
  spec.global_rope = {float(base), false, nullptr, true};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  spec.weight_names = {{".self_attn.query_layernorm.", ".self_attn.q_norm."},
                       {".self_attn.key_layernorm.", ".self_attn.k_norm."}};
  finish_attention(spec);
  return spec;
}

// llama with rope_parameters, sliding layers by layer_types, and Llama 4's
// position-dependent query scale.
TransformerSpec ministral3(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = head_dim_or_split(config, spec);
  const auto& parameters = config.object_or_null("rope_parameters");
  for (const char* key : {"rope_theta", "llama_4_scaling_beta", "original_max_position_embeddings"})
    if (!parameters.is_object() || !parameters.contains(key) || !parameters[key].is_number())
      throw Error(std::string("config.json (model_type ministral3): rope_parameters needs a "
                              "numeric ") +
                  key);
  spec.global_rope = {float(parameters["rope_theta"].get<double>()), false, parameters};
  spec.query_position_scale =
      QueryPositionScale{parameters["llama_4_scaling_beta"].get<double>(),
                         int(parameters["original_max_position_embeddings"].get<double>())};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  finish_attention(spec);
  sliding_layers_from_layer_types(config, spec);
  return spec;
}

// A plain MLP with XieLU, per-head q/k RMSNorms, no attention biases,
// apertus's norm names.
TransformerSpec apertus(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  config.required_bool("attention_bias");  // required by mlx-lm, unused by its module
  config.required_bool("post_norm");
  config.required_bool("qk_norm");
  spec.mlp_bias = config.required_bool("mlp_bias");
  spec.qk_norm = true;
  spec.gated_mlp = false;
  spec.activation = MlpActivation::xielu;
  spec.global_rope = {float(config.required_number("rope_theta")),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.required_bool("tie_word_embeddings"));
  spec.weight_names = {{".attention_layernorm.", ".input_layernorm."},
                       {".feedforward_layernorm.", ".post_attention_layernorm."}};
  finish_attention(spec);
  return spec;
}

}  // namespace

// llama with one bias switch for every projection and interleaved rope
// (rope_scaling is not read).
TransformerSpec ernie4_5(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = head_dim_or_split(config, spec);
  spec.qkv_bias = spec.output_bias = spec.mlp_bias = config.required_bool("use_bias");
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.global_rope = {float(config.required_number("rope_theta")), true, nullptr};
  spec.tied_head = tied_if(config.required_bool("tie_word_embeddings"));
  finish_attention(spec);
  return spec;
}

// llama with µP-style multipliers: embeddings, residual branches, the
// attention scale and (dividing) the logits.
TransformerSpec granite_fields(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = spec.output_bias = config.required_bool("attention_bias");
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.global_rope = {float(config.required_number("rope_theta")), false,
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  finish_attention(spec);
  spec.attention_scale = float(config.required_number("attention_multiplier"));
  spec.embedding_scale = float(config.required_number("embedding_multiplier"));
  spec.residual_scale = float(config.required_number("residual_multiplier"));
  spec.logits_divisor = float(config.required_number("logits_scaling"));
  return spec;
}

TransformerSpec qwen3(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.max_position_embeddings = config.required_int("max_position_embeddings");
  spec.qk_norm = true;
  // transformers >= 5 nests rope_theta / rope_scaling under rope_parameters.
  const auto& parameters = config.object_or_null("rope_parameters");
  nlohmann::json scaling = config.object_or_null("rope_scaling");
  std::optional<double> theta;
  if (config.has("rope_theta")) theta = config.required_number("rope_theta");
  if (!parameters.is_null()) {
    if (!theta && parameters.contains("rope_theta")) theta = parameters["rope_theta"].get<double>();
    if (scaling.is_null()) scaling = parameters;
  }
  if (!theta) throw Error("config.json (model_type qwen3): rope_theta is missing");
  spec.global_rope = {float(*theta), false, scaling};
  spec.tied_head = tied_if(config.required_bool("tie_word_embeddings"));
  finish_attention(spec);
  return spec;
}

const BuilderTable& rms_norm_builders() {
  static const BuilderTable builders = {{"llama", llama},
                                        {"qwen2", qwen2},
                                        {"qwen3", qwen3},
                                        {"gemma3_text", gemma3_text},
                                        {"gemma", gemma},
                                        {"helium", helium},
                                        {"smollm3", smollm3},
                                        {"exaone", exaone},
                                        {"ernie4_5", ernie4_5},
                                        {"seed_oss", seed_oss},
                                        {"mimo", mimo},
                                        {"granite", granite},
                                        {"minicpm", minicpm},
                                        {"olmo2", olmo2},
                                        {"olmo3", olmo3},
                                        {"exaone4", exaone4},
                                        {"glm4", glm4},
                                        {"gemma2", gemma2},
                                        {"phi3", phi3},
                                        {"internlm2", internlm2},
                                        {"internlm3", internlm3},
                                        {"hunyuan_v1_dense", hunyuan_v1_dense},
                                        {"ministral3", ministral3},
                                        {"apertus", apertus}};
  return builders;
}

}  // namespace mlx_cpp::architecture
