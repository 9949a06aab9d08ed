#pragma once
// What the converter knows per GGUF architecture: the mlx-lm model_type, how
// GGUF tensor names map to Hugging Face names, which llama.cpp conversion
// steps must be undone (rotary row permutation of attn_q/attn_k for llama,
// +1 on Gemma norm weights), and the config.json it implies.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mlx_cpp::gguf {

class GgufFile;

struct ArchitectureSpec {
  const char* gguf_name;      // general.architecture
  const char* model_type;     // config.json model_type (mlx-lm module name)
  const char* hf_class;       // config.json architectures[0]
  bool rope_rows_permuted;    // llama.cpp permuted attn_q / attn_k rows
  bool norms_shifted_by_one;  // llama.cpp stored Gemma norms as 1 + w
};

// The spec of the file's general.architecture; throws Error naming the
// supported architectures when it is unknown.
const ArchitectureSpec& architecture_of(const GgufFile& file);

// "model.layers.3.self_attn.q_proj.weight" for "blk.3.attn_q.weight", or
// nullopt for names the architecture does not define.
std::optional<std::string> hugging_face_name(const ArchitectureSpec& spec,
                                             const std::string& gguf_name);

// config.json (without the quantization block) for the file.
nlohmann::json model_config(const GgufFile& file, const ArchitectureSpec& spec);

// A float32 metadata value as the shortest decimal that reads back to the
// same float32 (9.999999747378752e-06 -> 1e-05), so configs read naturally.
double shortest_float32(double value);

}  // namespace mlx_cpp::gguf
