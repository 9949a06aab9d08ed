// The descriptor table's mixtures of experts: a dense attention stack
// whose MLPs are routed experts (MoeSpec), as mlx-lm's MoE blocks compute
// them.
#include <algorithm>

#include "io/error.h"
#include "model/architecture_fields.h"

namespace mlx_cpp::architecture {
namespace {

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
  every_layer_moe(spec, shared_expert_moe(config));
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
  moe_by_sparse_step(spec, config);
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
  const int expert_ffn = count_or(config, "moe_intermediate_size", 0);
  MoeSpec moe;
  moe.num_experts = config.required_int("moe_num_experts");
  moe.top_k = config.int_or("moe_k", 1);
  moe.intermediate_size = expert_ffn ? expert_ffn : spec.intermediate_size;
  const auto& gate_act = config.value("moe_gate_act");
  const auto act = gate_act.is_string() ? gate_act.get<std::string>() : std::string("softmax");
  if (act != "softmax" && act != "sigmoid")
    throw Error("config.json (model_type ernie4_5_moe): moe_gate_act must be softmax or sigmoid");
  moe.scoring = act == "softmax" ? RouterScoring::softmax : RouterScoring::sigmoid;
  moe.scores_in_float32 = true;
  moe.precise_softmax = false;
  moe.normalization = TopKNormalization::by_floored_sum;
  moe.expert_bias = moe.shared_bias = spec.mlp_bias;
  const int shared = count_or(config, "moe_num_shared_experts", 0);
  moe.shared_intermediate_size = shared * moe.intermediate_size;
  every_layer_moe(spec, moe);
  auto bound = [&](const char* key, int fallback, bool lowest) {
    const auto& value = config.value(key);
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
  moe.shared_intermediate_size = count_or(config, "n_shared_experts", 0) * moe.intermediate_size;
  moe.shared_bias = shared_bias;
  return moe;
}

void moe_after_dense_layers(TransformerSpec& spec, const ConfigReader& config, MoeSpec moe) {
  every_layer_moe(spec, moe);
  const int dense = count_or(config, "first_k_dense_replace", 0);
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

}  // namespace

const BuilderTable& moe_builders() {
  static const BuilderTable builders = {{"mixtral", mixtral},
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

}  // namespace mlx_cpp::architecture
