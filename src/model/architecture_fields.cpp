#include "model/architecture_fields.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"

namespace mlx_cpp::architecture {

float inverse_sqrt(double value) {
  return static_cast<float>(std::pow(value, -0.5));
}

TransformerSpec common_fields(const ConfigReader& config) {
  return fields_with_eps(config, "rms_norm_eps");
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
  const auto& list = config.value(key.c_str());
  if (!list.is_array() || static_cast<int>(list.size()) != layers)
    throw Error("config.json: " + key + " must list one " + entry + " per layer");
  return list;
}

int count_or(const ConfigReader& config, const char* key, int fallback) {
  const auto& value = config.value(key);
  if (value.is_null()) return fallback;
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > (1 << 30))
    throw Error(std::string("config.json: '") + key + "' must be a count (0 or more)");
  return value.get<int>();
}

void sliding_layers_from_layer_types(const ConfigReader& config, TransformerSpec& spec) {
  if (!config.has("layer_types")) return;
  const auto& types = per_layer(config, "layer_types", spec.num_layers, "type");
  for (int i = 0; i < spec.num_layers; ++i)
    spec.layer_is_sliding[i] = types[i] == "sliding_attention";
  spec.sliding_window = config.optional_int("sliding_window");
}

TiedHead tied_if(bool tied) {
  return tied ? TiedHead::tied : TiedHead::untied;
}

// head_dim where the config gives one (null counts as none), else hidden / heads.
int head_dim_or_split(const ConfigReader& config, const TransformerSpec& spec) {
  const bool given = config.has("head_dim");
  return given ? config.required_int("head_dim") : spec.hidden_size / spec.num_heads;
}

TransformerSpec fields_besides_feed_forward(const ConfigReader& config, const char* eps_key) {
  TransformerSpec spec;
  spec.hidden_size = config.required_int("hidden_size");
  spec.num_layers = config.required_int("num_hidden_layers");
  spec.num_heads = config.required_int("num_attention_heads");
  spec.vocab_size = config.required_int("vocab_size");
  spec.norm_eps = static_cast<float>(config.required_number(eps_key));
  spec.num_kv_heads = config.int_or("num_key_value_heads", spec.num_heads);
  spec.max_position_embeddings = config.optional_int("max_position_embeddings");
  spec.layer_is_sliding.assign(spec.num_layers, false);
  return spec;
}

void every_layer_moe(TransformerSpec& spec, MoeSpec moe) {
  if (moe.top_k < 1 || moe.top_k > moe.num_experts)
    throw Error("config.json: " + std::to_string(moe.top_k) + " experts per token of " +
                std::to_string(moe.num_experts));
  spec.moe = moe;
  spec.layer_is_moe.assign(spec.num_layers, true);
}

void moe_by_sparse_step(TransformerSpec& spec, const ConfigReader& config) {
  const int step = config.required_int("decoder_sparse_step");
  if (step < 1) throw Error("config.json: decoder_sparse_step must be >= 1");
  const auto& dense = config.value("mlp_only_layers");
  if (!dense.is_array()) throw Error("config.json: mlp_only_layers must be a list");
  for (int i = 0; i < spec.num_layers; ++i)
    spec.layer_is_moe[i] =
        (i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end();
}

MoeSpec shared_expert_moe(const ConfigReader& config) {
  MoeSpec moe;
  moe.num_experts = config.required_int("num_experts");
  moe.top_k = config.required_int("num_experts_per_tok");
  moe.intermediate_size = config.required_int("moe_intermediate_size");
  moe.shared_intermediate_size = config.required_int("shared_expert_intermediate_size");
  moe.shared_gate = true;
  return moe;
}

// The layer-norm families name their epsilon otherwise; everything else as
// common_fields reads it.
TransformerSpec fields_with_eps(const ConfigReader& config, const char* eps_key) {
  auto spec = fields_besides_feed_forward(config, eps_key);
  spec.intermediate_size = config.required_int("intermediate_size");
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

}  // namespace mlx_cpp::architecture
