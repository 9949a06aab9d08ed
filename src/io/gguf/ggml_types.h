#pragma once
// The GGML tensor types a GGUF file can name: their ids, names and block
// geometry (elements per block, bytes per block), as in ggml.h.
#include <cstdint>
#include <string>

namespace mlx_cpp::gguf {

enum class GgmlType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};

struct GgmlTypeTraits {
  const char* name;
  std::uint32_t block_size;  // elements per block
  std::uint32_t type_size;   // bytes per block
};

// Traits of a type id, or nullptr for ids that ggml does not define.
const GgmlTypeTraits* ggml_type_traits(std::uint32_t type_id);

// "Q4_K", or "unknown type 77" for ids without traits.
std::string ggml_type_name(std::uint32_t type_id);

}  // namespace mlx_cpp::gguf
