#include "model/gemma4_config.h"

#include "io/error.h"

namespace mlx_cpp {
namespace {

[[noreturn]] void refuse(const std::string& what) {
  throw Error("config.json (model_type gemma4_text): " + what);
}

// A field given as null: mlx-lm's ModelArgs then holds None, not its default.
bool explicitly_null(const ConfigReader& config, const char* key) {
  return config.value(key).is_null() && config.raw().contains(key);
}

// A count that may be 0 (ConfigReader's integers are positive).
int non_negative(const ConfigReader& config, const char* key, int fallback) {
  const auto& value = config.value(key);
  if (value.is_null()) return fallback;
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= (1 << 30))
    refuse(std::string(key) + " must be an integer from 0, not " + value.dump());
  return value.get<int>();
}

// ConfigReader's integers are positive (below 2^30).
int positive(const ConfigReader& config, const char* key, int fallback) {
  return config.int_or(key, fallback);
}

// Each layer's kind: layer_types, else sliding_window_pattern - 1 sliding
// layers then a full one, repeated.
std::vector<bool> sliding_layers(const ConfigReader& config, int layers) {
  std::vector<bool> sliding(layers);
  const auto& types = config.value("layer_types");
  if (!types.is_null()) {
    if (!types.is_array() || static_cast<int>(types.size()) != layers)
      refuse("layer_types must list one type per layer (" + std::to_string(layers) + ")");
    for (int i = 0; i < layers; ++i) {
      const std::string type = types[i].is_string() ? types[i].get<std::string>() : "";
      if (type != "sliding_attention" && type != "full_attention")
        refuse("layer_types[" + std::to_string(i) + "] is " + types[i].dump() +
               ", not sliding_attention or full_attention");
      sliding[i] = type == "sliding_attention";
    }
    return sliding;
  }
  const int pattern = positive(config, "sliding_window_pattern", 5);
  for (int i = 0; i < layers; ++i) sliding[i] = i % pattern != pattern - 1;
  return sliding;
}

// rope_parameters of one kind of layer, with mlx-lm's defaults when the
// config gives none.
nlohmann::json rope_of(const ConfigReader& config, const char* kind) {
  const auto& parameters = config.value("rope_parameters");
  if (parameters.is_null()) {
    if (std::string(kind) == "full_attention")
      return {{"partial_rotary_factor", 0.25},
              {"rope_theta", 1000000.0},
              {"rope_type", "proportional"}};
    return {{"partial_rotary_factor", 1.0}, {"rope_theta", 10000.0}, {"rope_type", "default"}};
  }
  if (!parameters.is_object()) refuse("rope_parameters must be an object");
  if (!parameters.contains(kind)) return nlohmann::json::object();
  if (!parameters[kind].is_object())
    refuse(std::string("rope_parameters.") + kind + " must be an object");
  return parameters[kind];
}

}  // namespace

Gemma4Config read_gemma4_config(const ConfigReader& config) {
  Gemma4Config result;
  result.hidden_size = positive(config, "hidden_size", 1536);
  const int layers = positive(config, "num_hidden_layers", 35);
  result.intermediate_size = positive(config, "intermediate_size", 6144);
  result.num_heads = positive(config, "num_attention_heads", 8);
  const int head_dim = positive(config, "head_dim", 256);
  // A null or zero global_head_dim gives the full layers head_dim.
  const int global_head_dim =
      explicitly_null(config, "global_head_dim") ? 0 : non_negative(config, "global_head_dim", 512);
  result.norm_eps = static_cast<float>(config.number_or("rms_norm_eps", 1e-6));
  result.vocab_size = positive(config, "vocab_size", 262144);
  result.per_layer_input_size = non_negative(config, "hidden_size_per_layer_input", 256);
  result.vocab_size_per_layer_input = positive(config, "vocab_size_per_layer_input", 262144);
  const int kv_heads = positive(config, "num_key_value_heads", 1);
  const auto global_kv_heads = config.optional_int("num_global_key_value_heads");
  const int shared_layers = non_negative(config, "num_kv_shared_layers", 20);
  if (shared_layers >= layers)
    refuse("num_kv_shared_layers (" + std::to_string(shared_layers) +
           ") must leave at least one of the " + std::to_string(layers) + " layers its own keys");
  result.first_shared_layer = layers - shared_layers;
  result.rope_traditional = config.bool_or("rope_traditional", false);
  result.sliding_rope = rope_of(config, "sliding_attention");
  result.full_rope = rope_of(config, "full_attention");
  result.sliding_window = positive(config, "sliding_window", 512);
  result.max_position_embeddings = config.int_or("max_position_embeddings", 131072);
  const bool keys_are_values = config.bool_or("attention_k_eq_v", false);
  if (!explicitly_null(config, "final_logit_softcapping"))
    result.final_softcap = static_cast<float>(config.number_or("final_logit_softcapping", 30.0));
  const bool double_wide = config.bool_or("use_double_wide_mlp", true);
  result.tied_head = config.bool_or("tie_word_embeddings", true);
  if (config.bool_or("enable_moe_block", false))
    result.experts =
        Gemma4Experts{config.required_int("num_experts"), config.required_int("top_k_experts"),
                      config.required_int("moe_intermediate_size")};
  if (result.experts && result.experts->top_k > result.experts->num_experts)
    refuse("top_k_experts exceeds num_experts");

  const auto sliding = sliding_layers(config, layers);
  int last_sliding = -1, last_full = -1;  // the latest layer of each kind that owns its keys
  for (int i = 0; i < layers; ++i) {
    Gemma4Layer layer;
    layer.sliding = sliding[i];
    layer.head_dim = sliding[i] || global_head_dim == 0 ? head_dim : global_head_dim;
    layer.keys_are_values = keys_are_values && !sliding[i];
    layer.kv_heads = layer.keys_are_values && global_kv_heads ? *global_kv_heads : kv_heads;
    if (layer.kv_heads < 1 || result.num_heads % layer.kv_heads != 0)
      refuse("layer " + std::to_string(i) + "'s " + std::to_string(layer.kv_heads) +
             " key heads do not divide its " + std::to_string(result.num_heads) + " heads");
    layer.owns_kv = i < result.first_shared_layer;
    int& last = sliding[i] ? last_sliding : last_full;
    if (layer.owns_kv) last = i;
    if (!layer.owns_kv && last < 0)
      refuse("shared layer " + std::to_string(i) + " has no earlier " +
             (sliding[i] ? "sliding" : "full") + "-attention layer to take its keys from");
    layer.kv_source = layer.owns_kv ? i : last;
    const bool wide = double_wide && !layer.owns_kv && result.first_shared_layer > 0;
    layer.intermediate_size = result.intermediate_size * (wide ? 2 : 1);
    result.layers.push_back(layer);
  }
  for (const auto& layer : result.layers)
    if (!layer.owns_kv && (result.layers[layer.kv_source].head_dim != layer.head_dim ||
                           result.layers[layer.kv_source].kv_heads != layer.kv_heads))
      refuse("a shared layer's keys differ in shape from its source layer's");
  return result;
}

}  // namespace mlx_cpp
