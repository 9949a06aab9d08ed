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

// Requantization bits when --bits is not given: 4, except Q6_K and Q8_K ->
// 8, so the sensitive tensors llama.cpp kept at 6+ bits stay there. Q6_K
// goes to 8 bits, not 6: the own 6-bit decode kernel unpacks at ~10 G
// weights/s per core against ~17 G at 8 bits, so Qwen2.5-1.5B's decode read
// 9% fewer bytes at 6 bits but ran no faster, and perplexity rose 0.3%
// (20.95 -> 21.01, tests/data/perplexity_text.md).
int default_requantization_bits(std::uint32_t type_id);

// Row order that undoes llama.cpp's permute(w, n_head): GGUF row
// h*D + 2*i + s holds Hugging Face row h*D + s*D/2 + i (D = rows per head).
std::vector<int> unpermute_rope_rows(int rows, int heads);

}  // namespace mlx_cpp::gguf
