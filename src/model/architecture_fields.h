#pragma once
// What the descriptor table's builders share (the files *_architectures.cpp,
// one per family): the fields every llama-family config has, finishing an
// attention spec, and the builders other families start from. Not for use
// outside those files; the table's interface is architectures.h.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/config_reader.h"
#include "model/transformer_spec.h"

namespace mlx_cpp::architecture {

using Builder = std::function<TransformerSpec(const ConfigReader&)>;
using BuilderTable = std::vector<std::pair<std::string, Builder>>;

float inverse_sqrt(double value);
// The fields every llama-family config shares.
TransformerSpec common_fields(const ConfigReader& config);
// The layer-norm families name their epsilon otherwise; everything else as
// common_fields reads it.
TransformerSpec fields_with_eps(const ConfigReader& config, const char* eps_key);
// Every layer's MLP a mixture of experts (top_k checked against the experts).
void every_layer_moe(TransformerSpec& spec, MoeSpec moe);
// Qwen's placement of experts: a mixture of experts every
// decoder_sparse_step-th layer but those in mlp_only_layers, which keep the
// dense MLP (qwen3_moe, qwen3_next); after every_layer_moe.
void moe_by_sparse_step(TransformerSpec& spec, const ConfigReader& config);
// qwen2_moe's experts as its config sizes them, with a shared expert behind
// a sigmoid gate (qwen2_moe, qwen3_5_moe).
MoeSpec shared_expert_moe(const ConfigReader& config);
// fields_with_eps without intermediate_size, for configs that size their
// feed-forward otherwise.
TransformerSpec fields_besides_feed_forward(const ConfigReader& config, const char* eps_key);
// Checks the head counts, sets the attention scale, the local rope and the
// layers' rope flags.
void finish_attention(TransformerSpec& spec);
// A config list with one entry per layer (`entry` names them in the error).
const nlohmann::json& per_layer(const ConfigReader& config, const std::string& key, int layers,
                                const std::string& entry);
// Sliding-window layers where layer_types says "sliding_attention", with
// sliding_window as their window.
void sliding_layers_from_layer_types(const ConfigReader& config, TransformerSpec& spec);
TiedHead tied_if(bool tied);
// A count that may be 0 (first_k_dense_replace, n_shared_experts), or
// `fallback` when absent.
int count_or(const ConfigReader& config, const char* key, int fallback);
// head_dim where the config gives one (null counts as none), else hidden / heads.
int head_dim_or_split(const ConfigReader& config, const TransformerSpec& spec);
// Python's int(partial_rotary_factor * head_dim).
int rotary_dims_of(const ConfigReader& config, int head_dim, double fallback);
// Python's math.sqrt(1 / head_dim), the scale phi and stablelm compute.
float sqrt_of_inverse(int head_dim);

// Builders other families start from.
TransformerSpec qwen3(const ConfigReader& config);
TransformerSpec ernie4_5(const ConfigReader& config);
// granite's attention and µP multipliers, without its MLP bias.
TransformerSpec granite_fields(const ConfigReader& config);

// Each family's builders, in table order.
const BuilderTable& rms_norm_builders();
const BuilderTable& layer_norm_builders();
const BuilderTable& moe_builders();
const BuilderTable& hybrid_builders();

}  // namespace mlx_cpp::architecture
