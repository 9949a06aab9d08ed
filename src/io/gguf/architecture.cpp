#include "io/gguf/architecture.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "io/error.h"
#include "io/gguf/gguf_file.h"

namespace mlx_cpp::gguf {
namespace {

constexpr std::array<ArchitectureSpec, 3> kArchitectures{{
    {"llama", "llama", "LlamaForCausalLM", true, false},
    {"qwen2", "qwen2", "Qwen2ForCausalLM", false, false},
    {"gemma3", "gemma3_text", "Gemma3ForCausalLM", false, true},
}};

// Per-block tensors shared by the llama family: GGUF suffix -> HF suffix.
const std::map<std::string, std::string>& block_names() {
  static const std::map<std::string, std::string> names{
      {"attn_norm", "input_layernorm"},
      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
      {"ffn_norm", "post_attention_layernorm"},
  };
  return names;
}

// Gemma 3 has four norms per block; GGUF's ffn_norm is its pre-MLP norm.
const std::map<std::string, std::string>& gemma3_block_names() {
  static const std::map<std::string, std::string> names{
      {"ffn_norm", "pre_feedforward_layernorm"},
      {"post_attention_norm", "post_attention_layernorm"},
      {"post_ffw_norm", "post_feedforward_layernorm"},
  };
  return names;
}

std::optional<std::string> block_tensor_name(const ArchitectureSpec& spec,
                                             const std::string& rest) {
  // rest: "<N>.<suffix>.<weight|bias>"
  auto first_dot = rest.find('.');
  auto last_dot = rest.rfind('.');
  if (first_dot == std::string::npos || last_dot <= first_dot) return std::nullopt;
  auto layer = rest.substr(0, first_dot);
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  auto suffix = rest.substr(first_dot + 1, last_dot - first_dot - 1);
  auto kind = rest.substr(last_dot + 1);
  if (kind != "weight" && kind != "bias") return std::nullopt;
  const std::string* mapped = nullptr;
  if (std::string(spec.gguf_name) == "gemma3") {
    auto found = gemma3_block_names().find(suffix);
    if (found != gemma3_block_names().end()) mapped = &found->second;
  }
  if (mapped == nullptr) {
    auto found = block_names().find(suffix);
    if (found == block_names().end()) return std::nullopt;
    mapped = &found->second;
  }
  return "model.layers." + layer + "." + *mapped + "." + kind;
}

std::string key(const ArchitectureSpec& spec, const std::string& suffix) {
  return std::string(spec.gguf_name) + "." + suffix;
}

// HF rope_scaling from {arch}.rope.scaling.*; null when absent or "none".
nlohmann::json rope_scaling(const GgufFile& file, const ArchitectureSpec& spec) {
  auto type = file.string_or(key(spec, "rope.scaling.type"), "none");
  if (type == "none") return nullptr;
  nlohmann::json scaling{{"type", type}, {"rope_type", type}};
  scaling["factor"] = shortest_float32(file.float_or(key(spec, "rope.scaling.factor"), 1.0));
  if (const auto* original = file.find(key(spec, "rope.scaling.original_context_length"))) {
    scaling["original_max_position_embeddings"] = original->as_uint();
  }
  return scaling;
}

std::uint64_t vocab_size(const GgufFile& file, const ArchitectureSpec& spec) {
  if (const auto* embedding = file.find_tensor("token_embd.weight")) {
    return embedding->dims.size() == 2 ? embedding->dims[1] : 0;
  }
  return file.uint_or(key(spec, "vocab_size"), 0);
}

void add_gemma3_fields(const GgufFile& file, const ArchitectureSpec& spec, nlohmann::json& config,
                       std::uint64_t head_dim) {
  // llama.cpp scales queries by 1/sqrt(head_dim) except for Gemma 3 27B
  // (62 layers), which uses hidden / heads; mirror that choice.
  std::uint64_t layers = config["num_hidden_layers"];
  std::uint64_t scalar = layers == 62 ? config["hidden_size"].get<std::uint64_t>() /
                                            config["num_attention_heads"].get<std::uint64_t>()
                                      : head_dim;
  config["query_pre_attn_scalar"] = scalar;
  config["sliding_window"] = file.uint_or(key(spec, "attention.sliding_window"), 512);
  // GGUF does not store the pattern or the local rope base for Gemma 3;
  // llama.cpp hard-codes both (every 6th layer global, local base 10000).
  config["sliding_window_pattern"] = file.uint_or(key(spec, "attention.sliding_window_pattern"), 6);
  config["rope_local_base_freq"] = 10000.0;
  config["hidden_activation"] = "gelu_pytorch_tanh";
}

}  // namespace

double shortest_float32(double value) {
  auto target = static_cast<float>(value);
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, static_cast<double>(target));
    if (std::strtof(text, nullptr) == target) return std::strtod(text, nullptr);
  }
  return static_cast<double>(target);
}

const ArchitectureSpec& architecture_of(const GgufFile& file) {
  auto name = file.require("general.architecture").as_string();
  for (const auto& spec : kArchitectures) {
    if (name == spec.gguf_name) return spec;
  }
  throw Error("[convert] unsupported GGUF architecture '" + name + "' in " + file.path().string() +
              " (supported: llama, qwen2, gemma3)");
}

std::optional<std::string> hugging_face_name(const ArchitectureSpec& spec,
                                             const std::string& gguf_name) {
  if (gguf_name == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf_name == "output_norm.weight") return "model.norm.weight";
  if (gguf_name == "output.weight") return "lm_head.weight";
  if (gguf_name.rfind("blk.", 0) == 0) return block_tensor_name(spec, gguf_name.substr(4));
  return std::nullopt;
}

nlohmann::json model_config(const GgufFile& file, const ArchitectureSpec& spec) {
  auto hidden = file.require(key(spec, "embedding_length")).as_uint();
  auto heads = file.require(key(spec, "attention.head_count")).as_uint();
  if (heads == 0 || hidden % heads != 0) {
    throw Error("[convert] " + key(spec, "attention.head_count") + " = " + std::to_string(heads) +
                " does not divide the hidden size " + std::to_string(hidden));
  }
  auto head_dim = file.uint_or(key(spec, "attention.key_length"), hidden / heads);
  nlohmann::json config{
      {"architectures", {spec.hf_class}},
      {"model_type", spec.model_type},
      {"hidden_size", hidden},
      {"intermediate_size", file.require(key(spec, "feed_forward_length")).as_uint()},
      {"num_hidden_layers", file.require(key(spec, "block_count")).as_uint()},
      {"num_attention_heads", heads},
      {"num_key_value_heads", file.uint_or(key(spec, "attention.head_count_kv"), heads)},
      {"head_dim", head_dim},
      {"rms_norm_eps",
       shortest_float32(file.require(key(spec, "attention.layer_norm_rms_epsilon")).as_double())},
      {"rope_theta", shortest_float32(file.float_or(key(spec, "rope.freq_base"), 10000.0))},
      {"max_position_embeddings", file.uint_or(key(spec, "context_length"), 4096)},
      {"vocab_size", vocab_size(file, spec)},
      {"tie_word_embeddings", file.find_tensor("output.weight") == nullptr},
  };
  if (auto scaling = rope_scaling(file, spec); !scaling.is_null()) config["rope_scaling"] = scaling;
  if (const auto* bos = file.find("tokenizer.ggml.bos_token_id"))
    config["bos_token_id"] = bos->as_uint();
  if (const auto* eos = file.find("tokenizer.ggml.eos_token_id"))
    config["eos_token_id"] = eos->as_uint();
  std::string model = spec.gguf_name;
  if (model == "gemma3") {
    add_gemma3_fields(file, spec, config, head_dim);
  } else {
    config["hidden_act"] = "silu";
  }
  if (model == "llama") {
    config["attention_bias"] = file.find_tensor("blk.0.attn_q.bias") != nullptr;
    config["mlp_bias"] = false;
  }
  return config;
}

}  // namespace mlx_cpp::gguf
