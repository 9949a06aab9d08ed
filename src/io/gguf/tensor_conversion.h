#pragma once
// Converts one GGUF tensor into the MLX arrays stored under its Hugging Face
// name: exact affine carry where the block format allows it, otherwise
// dequantize + mlx::core::quantize, or dense in a chosen dtype. Undoes
// llama.cpp's rotary row permutation and Gemma's +1 norm shift on the way.
#include <mlx/array.h>

#include <map>
#include <optional>
#include <string>

#include "io/gguf/architecture.h"

namespace mlx_cpp::gguf {

class GgufFile;
struct TensorInfo;

struct QuantizationChoice {
  std::optional<int> bits;  // requantization bits; unset: by source type
  int group_size = 64;
  std::optional<mlx::core::Dtype> dense_dtype;  // set: no quantization at all
};

struct ConvertedTensor {
  std::map<std::string, mlx::core::array> arrays;  // full safetensors names
  std::optional<int> bits;                         // set when quantized
  int group_size = 0;
  bool exact = false;  // carried without requantization
};

struct TensorContext {
  const GgufFile& file;
  const ArchitectureSpec& spec;
  int attention_heads;
  int kv_heads;
};

ConvertedTensor convert_tensor(const TensorContext& context, const TensorInfo& tensor,
                               const std::string& hf_name, const QuantizationChoice& choice);

// Requantization bits when --bits is not given: 4, except Q6_K -> 6 and
// Q8_K -> 8, so the sensitive tensors llama.cpp kept at 6+ bits stay there.
// Q6_K's 16-weight sub-blocks with int8 scales have no exact affine form at
// group 32 or more, so it is requantized: at 6 bits, group 64 (6.5 bits per
// weight with float16 factors, against Q6_K's 6.56) perplexity rises 0.3%
// over an 8-bit carry (20.95 -> 21.01 on Qwen2.5-1.5B,
// tests/data/perplexity_text.md) and a decode step reads 9% fewer bytes
// (1048 against 1156 MB), decoding 3-34% faster (median 7%) on the own
// 6-bit kernel. --bits 8 keeps the closer carry.
int default_requantization_bits(std::uint32_t type_id);

// Row order that undoes llama.cpp's permute(w, n_head): GGUF row
// h*D + 2*i + s holds Hugging Face row h*D + s*D/2 + i (D = rows per head).
std::vector<int> unpermute_rope_rows(int rows, int heads);

}  // namespace mlx_cpp::gguf
