#include "model/architectures.h"

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
  spec.activation = GatedActivation::gelu;
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
TransformerSpec granite(const ConfigReader& config) {
  auto spec = common_fields(config);
  spec.num_kv_heads = config.required_int("num_key_value_heads");
  spec.head_dim = spec.hidden_size / spec.num_heads;
  spec.qkv_bias = spec.output_bias = config.required_bool("attention_bias");
  spec.mlp_bias = config.required_bool("mlp_bias");
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
  spec.activation = GatedActivation::gelu_approx;
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

const std::vector<std::pair<std::string, Builder>>& table() {
  static const std::vector<std::pair<std::string, Builder>> builders = {
      {"llama", llama},       {"qwen2", qwen2},
      {"qwen3", qwen3},       {"gemma3_text", gemma3_text},
      {"gemma", gemma},       {"helium", helium},
      {"smollm3", smollm3},   {"exaone", exaone},
      {"ernie4_5", ernie4_5}, {"seed_oss", seed_oss},
      {"mimo", mimo},         {"granite", granite},
      {"minicpm", minicpm},   {"olmo2", olmo2},
      {"olmo3", olmo3},       {"exaone4", exaone4},
      {"glm4", glm4}};
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
  std::string list;
  for (const auto& name : supported_model_types()) list += (list.empty() ? "" : ", ") + name;
  throw Error("unsupported model_type '" + config["model_type"].get<std::string>() +
              "' (supported: " + list + "; mistral and iquestcoder map to llama)");
}

}  // namespace mlx_cpp
