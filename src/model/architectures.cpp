#include "model/architectures.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "io/error.h"
#include "model/config_reader.h"

namespace mlx_cpp {
namespace {

using Builder = std::function<TransformerSpec(const ConfigReader&)>;

float inverse_sqrt(double value) {
  return static_cast<float>(std::pow(value, -0.5));
}

// The fields every llama-family config shares.
TransformerSpec common_fields(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.required_int("hidden_size");
  spec.num_layers = config.required_int("num_hidden_layers");
  spec.intermediate_size = config.required_int("intermediate_size");
  spec.num_heads = config.required_int("num_attention_heads");
  spec.vocab_size = config.required_int("vocab_size");
  spec.norm_eps = static_cast<float>(config.required_number("rms_norm_eps"));
  spec.num_kv_heads = config.int_or("num_key_value_heads", spec.num_heads);
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  return spec;
}

void finish_attention(TransformerSpec& spec) {
  if (spec.num_heads % spec.num_kv_heads != 0)
    throw Error("config.json: num_attention_heads " + std::to_string(spec.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(spec.num_kv_heads));
  spec.attention_scale = inverse_sqrt(spec.head_dim);
  spec.local_rope = spec.global_rope;
  if (spec.layer_uses_rope.empty()) spec.layer_uses_rope.assign(spec.num_layers, true);
}

// A config list with one entry per layer (`entry` names them in the error).
const nlohmann::json& per_layer(const ConfigReader& config, const std::string& key, int layers,
                                const std::string& entry) {
  const auto& list = config.raw()[key];
  if (!list.is_array() || static_cast<int>(list.size()) != layers)
    throw Error("config.json: " + key + " must list one " + entry + " per layer");
  return list;
}

TiedHead tied_if(bool tied) {
  return tied ? TiedHead::tied : TiedHead::untied;
}

// head_dim where the config gives one (null counts as none), else hidden / heads.
int head_dim_or_split(const ConfigReader& config, const TransformerSpec& spec) {
  const bool given = config.has("head_dim") && !config.raw()["head_dim"].is_null();
  return given ? config.required_int("head_dim") : spec.hidden_size / spec.num_heads;
}

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
  if (config.has("layer_types")) {
    const auto& types = per_layer(config, "layer_types", spec.num_layers, "type");
    for (int i = 0; i < spec.num_layers; ++i)
      spec.layer_is_sliding[i] = types[i] == "sliding_attention";
    spec.sliding_window = config.optional_int("sliding_window");
  }
  return spec;
}

// llama with some layers that have no rotary positions (NoPE): the config's
// no_rope_layers (1 = rope), or every no_rope_layer_interval-th layer.
TransformerSpec smollm3(const ConfigReader& config) {
  auto spec = llama(config);
  if (config.has("no_rope_layers") && !config.raw()["no_rope_layers"].is_null()) {
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
  if (config.has("layer_types") && !config.raw()["layer_types"].is_null()) {
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
  const auto& pattern = config.raw().value("sliding_window_pattern", nlohmann::json());
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
  return spec;
}

// The layer-norm families name their epsilon otherwise; everything else as
// common_fields reads it.
TransformerSpec fields_with_eps(const ConfigReader& config, const char* eps_key) {
  TransformerSpec spec;
  spec.hidden_size = config.required_int("hidden_size");
  spec.num_layers = config.required_int("num_hidden_layers");
  spec.intermediate_size = config.required_int("intermediate_size");
  spec.num_heads = config.required_int("num_attention_heads");
  spec.vocab_size = config.required_int("vocab_size");
  spec.norm_eps = static_cast<float>(config.required_number(eps_key));
  spec.num_kv_heads = config.int_or("num_key_value_heads", spec.num_heads);
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  return spec;
}

// Python's int(partial_rotary_factor * head_dim).
int rotary_dims_of(const ConfigReader& config, int head_dim, double fallback) {
  return int(config.number_or("partial_rotary_factor", fallback) * head_dim);
}

// Python's math.sqrt(1 / head_dim), the scale phi and stablelm compute.
float sqrt_of_inverse(int head_dim) {
  return static_cast<float>(std::sqrt(1.0 / head_dim));
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
  if (config.has("layer_types")) {
    const auto& types = per_layer(config, "layer_types", spec.num_layers, "type");
    for (int i = 0; i < spec.num_layers; ++i)
      spec.layer_is_sliding[i] = types[i] == "sliding_attention";
    spec.sliding_window = config.optional_int("sliding_window");
  }
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

// ---- Mixtures of experts: a dense attention stack whose MLPs are routed
// experts (MoeSpec), as mlx-lm's MoE blocks compute them.

void every_layer_moe(TransformerSpec& spec, MoeSpec moe) {
  if (moe.top_k < 1 || moe.top_k > moe.num_experts)
    throw Error("config.json: " + std::to_string(moe.top_k) + " experts per token of " +
                std::to_string(moe.num_experts));
  spec.moe = moe;
  spec.layer_is_moe.assign(spec.num_layers, true);
}

// llama whose MLPs are experts chosen from the top k logits (a softmax
// over those), under block_sparse_moe.
TransformerSpec mixtral(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.int_or("hidden_size", 4096);
  spec.num_layers = config.int_or("num_hidden_layers", 32);
  spec.intermediate_size = config.int_or("intermediate_size", 14336);
  spec.num_heads = config.int_or("num_attention_heads", 32);
  spec.num_kv_heads = config.int_or("num_key_value_heads", 8);
  spec.vocab_size = config.int_or("vocab_size", 32000);
  spec.norm_eps = float(config.number_or("rms_norm_eps", 1e-5));
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.global_rope = {float(config.number_or("rope_theta", 1e6)),
                      config.bool_or("rope_traditional", false), nullptr};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  spec.weight_names = {{".block_sparse_moe.", ".mlp."}};
  finish_attention(spec);
  MoeSpec moe;
  moe.num_experts = config.int_or("num_local_experts", 8);
  moe.top_k = config.int_or("num_experts_per_tok", 2);
  moe.intermediate_size = spec.intermediate_size;
  moe.scoring = RouterScoring::softmax_of_top_k;
  every_layer_moe(spec, moe);
  return spec;
}

// qwen2's attention (its rope_scaling validated but unused, as mlx-lm
// does); a softmax over every expert, and a shared expert behind a sigmoid
// gate.
TransformerSpec qwen2_moe(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = true;
  const auto& scaling = config.object_or_null("rope_scaling");
  if (!scaling.is_null() && (!scaling.contains("factor") || scaling.value("type", "") != "linear"))
    throw Error(
        "config.json (model_type qwen2_moe): rope_scaling must have a factor and type linear");
  spec.global_rope = {float(config.number_or("rope_theta", 1e6)),
                      config.bool_or("rope_traditional", false), nullptr};
  spec.tied_head = TiedHead::untied;
  spec.weight_names = {{".mlp.shared_expert.", ".mlp.shared_experts."}};
  finish_attention(spec);
  MoeSpec moe;
  moe.num_experts = config.required_int("num_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = config.required_int("moe_intermediate_size");
  moe.shared_intermediate_size = config.required_int("shared_expert_intermediate_size");
  moe.shared_gate = true;
  every_layer_moe(spec, moe);
  return spec;
}

// qwen3's attention (rope_scaling unused); a softmax over every expert,
// the top k by argpartition's upper end, optionally renormalised; dense
// MLPs in mlp_only_layers and between decoder_sparse_step.
TransformerSpec qwen3_moe(const ConfigReader& config) {
  auto spec = qwen3(config);
  spec.global_rope.scaling = nullptr;
  MoeSpec moe;
  moe.num_experts = config.required_int("num_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = config.required_int("moe_intermediate_size");
  moe.top_k_form = TopKForm::highest;
  if (config.required_bool("norm_topk_prob")) moe.normalization = TopKNormalization::by_sum;
  every_layer_moe(spec, moe);
  const int step = config.required_int("decoder_sparse_step");
  const auto& dense = config.raw()["mlp_only_layers"];
  if (!dense.is_array())
    throw Error("config.json (model_type qwen3_moe): mlp_only_layers must be a list");
  for (int i = 0; i < spec.num_layers; ++i)
    spec.layer_is_moe[i] =
        (i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end();
  return spec;
}

// q/k norms over the whole projections, biases by attention_bias, experts
// with mlp_bias, a tied head by default.
TransformerSpec olmoe(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.head_dim = head_dim_or_split(config, spec);
  spec.qkv_bias = spec.output_bias = config.bool_or("attention_bias", false);
  spec.qk_norm = spec.qk_norm_full_width = true;
  spec.global_rope = {float(config.number_or("rope_theta", 10000)),
                      config.bool_or("rope_traditional", false),
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", true));
  finish_attention(spec);
  MoeSpec moe;
  moe.num_experts = config.required_int("num_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = spec.intermediate_size;
  moe.expert_bias = config.bool_or("mlp_bias", false);
  if (config.bool_or("norm_topk_prob", false)) moe.normalization = TopKNormalization::by_sum;
  every_layer_moe(spec, moe);
  return spec;
}

// LayerNorms with biases, biases everywhere, longrope with the config's
// long_mscale, and phimoe's sparsemixer router.
TransformerSpec phimoe(const ConfigReader& config) {
  TransformerSpec spec;
  spec.hidden_size = config.int_or("hidden_size", 4096);
  spec.num_layers = config.int_or("num_hidden_layers", 32);
  spec.intermediate_size = config.int_or("intermediate_size", 6400);
  spec.num_heads = config.int_or("num_attention_heads", 32);
  spec.num_kv_heads = config.int_or("num_key_value_heads", 8);
  spec.vocab_size = config.int_or("vocab_size", 32064);
  spec.norm_eps = float(config.number_or("rms_norm_eps", 1e-6));
  spec.max_position_embeddings = config.int_or("max_position_embeddings", 131072);
  spec.layer_is_sliding.assign(spec.num_layers, false);
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = spec.output_bias = spec.head_bias = true;
  spec.norm_kind = NormKind::layer;
  spec.norm_bias = true;
  nlohmann::json scaling = config.object_or_null("rope_scaling");
  std::optional<float> input_scale;
  if (!scaling.is_null()) {
    for (const char* key : {"short_factor", "long_factor", "short_mscale", "long_mscale"})
      if (!scaling.contains(key))
        throw Error(std::string("config.json (model_type phimoe): rope_scaling needs ") + key);
    scaling["type"] = "longrope";
    scaling["original_max_position_embeddings"] =
        config.int_or("original_max_position_embeddings", 4096);
    const auto& mscale = scaling["long_mscale"];
    if (mscale.is_number() && mscale.get<double>() != 0) input_scale = mscale.get<float>();
  }
  spec.global_rope = {float(config.number_or("rope_theta", 10000)), false, scaling, false,
                      input_scale};
  spec.tied_head = TiedHead::untied;
  spec.weight_names = {{".block_sparse_moe.", ".mlp."}};
  finish_attention(spec);
  MoeSpec moe;
  moe.num_experts = config.int_or("num_local_experts", 16);
  moe.top_k = config.int_or("num_experts_per_tok", 2);
  moe.intermediate_size = spec.intermediate_size;
  moe.scoring = RouterScoring::sparsemixer;
  moe.sparsemixer_jitter = config.number_or("router_jitter_noise", 0.01);
  every_layer_moe(spec, moe);
  return spec;
}

// granite's µP multipliers; the router's top k logits, a float32 softmax
// over them.
TransformerSpec granitemoe(const ConfigReader& config) {
  auto spec = granite_fields(config);
  spec.weight_names = {{".block_sparse_moe.router.layer.", ".mlp.gate."},
                       {".block_sparse_moe.", ".mlp."}};
  MoeSpec moe;
  moe.num_experts = config.required_int("num_local_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = spec.intermediate_size;
  moe.scoring = RouterScoring::softmax_of_top_k;
  moe.scores_in_float32 = true;
  moe.precise_softmax = false;
  moe.top_k_form = TopKForm::highest;
  every_layer_moe(spec, moe);
  return spec;
}

// ernie4_5 with experts between moe_layer_start_index and _end_index every
// moe_layer_interval layers: float32 softmax or sigmoid scores, always
// renormalised, shared experts added after.
TransformerSpec ernie4_5_moe(const ConfigReader& config) {
  auto spec = ernie4_5(config);
  const auto& raw = config.raw();
  const int expert_ffn = config.int_or("moe_intermediate_size", 0);
  MoeSpec moe;
  moe.num_experts = config.required_int("moe_num_experts");
  moe.top_k = config.int_or("moe_k", 1);
  moe.intermediate_size = expert_ffn ? expert_ffn : spec.intermediate_size;
  const auto act = raw.value("moe_gate_act", std::string("softmax"));
  if (act != "softmax" && act != "sigmoid")
    throw Error("config.json (model_type ernie4_5_moe): moe_gate_act must be softmax or sigmoid");
  moe.scoring = act == "softmax" ? RouterScoring::softmax : RouterScoring::sigmoid;
  moe.scores_in_float32 = true;
  moe.precise_softmax = false;
  moe.normalization = TopKNormalization::by_floored_sum;
  moe.expert_bias = moe.shared_bias = spec.mlp_bias;
  const int shared = raw.value("moe_num_shared_experts", 0);
  moe.shared_intermediate_size = shared * moe.intermediate_size;
  every_layer_moe(spec, moe);
  auto bound = [&](const char* key, int fallback, bool lowest) {
    const auto& value = raw.value(key, nlohmann::json());
    if (value.is_number_integer()) return value.get<int>();
    if (value.is_array() && !value.empty()) {
      auto values = value.get<std::vector<int>>();
      return lowest ? *std::min_element(values.begin(), values.end())
                    : *std::max_element(values.begin(), values.end());
    }
    return fallback;
  };
  const int start = bound("moe_layer_start_index", 0, true);
  const int end = bound("moe_layer_end_index", spec.num_layers - 1, false);
  const int interval = config.int_or("moe_layer_interval", 1);
  for (int i = 0; i < spec.num_layers; ++i)
    spec.layer_is_moe[i] = (i + 1) % interval == 0 && start <= i && i <= end;
  return spec;
}

// The DeepSeek-V3 style router (glm4_moe, dots1): float32 sigmoid scores,
// a correction bias for the choice, grouped top k, the weights
// renormalised (top k > 1) and scaled; shared experts; dense first layers.
MoeSpec grouped_sigmoid_moe(const ConfigReader& config, bool shared_bias) {
  MoeSpec moe;
  moe.num_experts = config.required_int("n_routed_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = config.required_int("moe_intermediate_size");
  moe.scoring = RouterScoring::sigmoid;
  moe.scores_in_float32 = true;
  moe.selection_bias = true;
  moe.groups = config.int_or("n_group", 1);
  moe.top_k_groups = config.int_or("topk_group", 1);
  if (moe.groups < moe.top_k_groups || moe.num_experts % moe.groups != 0)
    throw Error("config.json: n_group must divide n_routed_experts and be at least topk_group");
  if (config.required_bool("norm_topk_prob") && moe.top_k > 1)
    moe.normalization = TopKNormalization::by_sum;
  moe.routed_scaling = float(config.required_number("routed_scaling_factor"));
  if (config.has("n_shared_experts"))
    moe.shared_intermediate_size = config.required_int("n_shared_experts") * moe.intermediate_size;
  moe.shared_bias = shared_bias;
  return moe;
}

void moe_after_dense_layers(TransformerSpec& spec, const ConfigReader& config, MoeSpec moe) {
  every_layer_moe(spec, moe);
  const int dense = config.raw().value("first_k_dense_replace", 0);
  for (int i = 0; i < spec.num_layers; ++i) spec.layer_is_moe[i] = i >= dense;
}

// Per-head q/k norms (use_qk_norm), partial rotary without scaling, q/k/v
// biases, an untied head; its multi-token-prediction layer is unused.
TransformerSpec glm4_moe(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = config.required_int("head_dim");
  spec.qkv_bias = config.required_bool("attention_bias");
  spec.qk_norm = config.required_bool("use_qk_norm");
  spec.global_rope = {float(config.required_number("rope_theta")), false, nullptr};
  spec.rotary_dims = int(spec.head_dim * config.required_number("partial_rotary_factor"));
  spec.tied_head = TiedHead::untied;
  finish_attention(spec);
  moe_after_dense_layers(spec, config, grouped_sigmoid_moe(config, false));
  spec.ignored_weight_prefixes = {"model.layers." + std::to_string(spec.num_layers) + "."};
  return spec;
}

// Per-head q/k norms, no attention biases, experts under mlp.experts,
// MLP biases by mlp_bias.
TransformerSpec dots1(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = head_dim_or_split(config, spec);
  spec.qk_norm = true;
  spec.mlp_bias = config.bool_or("mlp_bias", false);
  spec.global_rope = {float(config.required_number("rope_theta")), false,
                      config.object_or_null("rope_scaling")};
  spec.tied_head = tied_if(config.bool_or("tie_word_embeddings", false));
  spec.weight_names = {{".mlp.experts.", ".mlp.switch_mlp."}};
  finish_attention(spec);
  moe_after_dense_layers(spec, config, grouped_sigmoid_moe(config, spec.mlp_bias));
  return spec;
}

const std::vector<std::pair<std::string, Builder>>& table() {
  static const std::vector<std::pair<std::string, Builder>> builders = {
      {"llama", llama},
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
      {"starcoder2", starcoder2},
      {"nemotron", nemotron},
      {"cohere", cohere},
      {"cohere2", cohere2},
      {"stablelm", stablelm},
      {"phi", phi},
      {"phi3", phi3},
      {"internlm2", internlm2},
      {"internlm3", internlm3},
      {"hunyuan_v1_dense", hunyuan_v1_dense},
      {"ministral3", ministral3},
      {"apertus", apertus},
      {"mixtral", mixtral},
      {"qwen2_moe", qwen2_moe},
      {"qwen3_moe", qwen3_moe},
      {"olmoe", olmoe},
      {"phimoe", phimoe},
      {"granitemoe", granitemoe},
      {"ernie4_5_moe", ernie4_5_moe},
      {"glm4_moe", glm4_moe},
      {"dots1", dots1}};
  return builders;
}

}  // namespace

std::string rewrite_name(const std::string& name, const std::vector<NameRewrite>& rules) {
  std::string result = name;
  for (const auto& rule : rules) {
    auto found = result.find(rule.from);
    if (found != std::string::npos) result.replace(found, rule.from.size(), rule.to);
  }
  return result;
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : table()) names.push_back(name);
  return names;
}

std::string remap_model_type(const std::string& model_type) {
  static const std::map<std::string, std::string> remapping = {{"mistral", "llama"},
                                                               {"iquestcoder", "llama"}};
  auto found = remapping.find(model_type);
  return found == remapping.end() ? model_type : found->second;
}

TransformerSpec build_transformer_spec(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    throw Error("config.json has no string 'model_type'");
  auto model_type = remap_model_type(config["model_type"].get<std::string>());
  for (const auto& [name, builder] : table()) {
    if (name != model_type) continue;
    auto spec = builder(ConfigReader(config));
    spec.model_type = model_type;
    return spec;
  }
  auto requested = config["model_type"].get<std::string>();
  auto join = [](const std::vector<std::string>& names) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    return list;
  };
  auto closest = closest_model_types(requested);
  throw Error("unsupported model_type '" + requested + "'" +
              (closest.empty() ? "" : " (closest supported: " + join(closest) + ")") +
              "; supported: " + join(supported_model_types()) +
              "; mistral and iquestcoder map to llama");
}

std::vector<std::string> closest_model_types(const std::string& model_type) {
  // Edit distance, with a supported name that begins the requested one
  // (qwen3 for qwen3_moe) or the reverse counted as one edit.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    const bool prefix = a.rfind(b, 0) == 0 || b.rfind(a, 0) == 0;
    // {counted, edits}: ties go to fewer real edits (gemma2 before gemma
    // for gemma2x).
    return std::pair<size_t, size_t>{prefix ? std::min<size_t>(row[b.size()], 1) : row[b.size()],
                                     row[b.size()]};
  };
  std::vector<std::pair<std::pair<size_t, size_t>, std::string>> scored;
  const size_t limit = std::max<size_t>(2, model_type.size() / 3);
  for (const auto& name : supported_model_types()) {
    const auto d = distance(model_type, name);
    if (d.first <= limit) scored.emplace_back(d, name);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) names.push_back(scored[i].second);
  return names;
}

}  // namespace mlx_cpp
