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
// goes to 8 bits, not 6: the own CPU kernels cover 4 and 8 bits (a 6-bit
// matrix runs MLX's scalar single-threaded quantized matmul: Qwen2.5-1.5B's
// 6-bit output matrix made decode ~5x slower), and 8 bits round less.
int default_requantization_bits(std::uint32_t type_id);

// Row order that undoes llama.cpp's permute(w, n_head): GGUF row
// h*D + 2*i + s holds Hugging Face row h*D + s*D/2 + i (D = rows per head).
std::vector<int> unpermute_rope_rows(int rows, int heads);

}  // namespace mlx_cpp::gguf
