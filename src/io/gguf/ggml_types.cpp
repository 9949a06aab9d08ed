#include "io/gguf/ggml_types.h"

#include <array>

namespace mlx_cpp::gguf {
namespace {

struct TypeEntry {
  std::uint32_t id;
  GgmlTypeTraits traits;
};

constexpr std::uint32_t kSuperBlock = 256;  // QK_K

// Every type id ggml defines (removed ids 4, 5, 31-33 are absent), so files
// with exotic types still parse and the dequantizer can name what it lacks.
constexpr std::array<TypeEntry, 34> kTypes{{
    {0, {"F32", 1, 4}},
    {1, {"F16", 1, 2}},
    {2, {"Q4_0", 32, 2 + 16}},
    {3, {"Q4_1", 32, 2 + 2 + 16}},
    {6, {"Q5_0", 32, 2 + 4 + 16}},
    {7, {"Q5_1", 32, 2 + 2 + 4 + 16}},
    {8, {"Q8_0", 32, 2 + 32}},
    {9, {"Q8_1", 32, 4 + 4 + 32}},
    {10, {"Q2_K", kSuperBlock, 2 + 2 + kSuperBlock / 16 + kSuperBlock / 4}},
    {11, {"Q3_K", kSuperBlock, 2 + kSuperBlock / 4 + kSuperBlock / 8 + 12}},
    {12, {"Q4_K", kSuperBlock, 2 + 2 + kSuperBlock / 2 + 12}},
    {13, {"Q5_K", kSuperBlock, 2 + 2 + kSuperBlock / 2 + kSuperBlock / 8 + 12}},
    {14, {"Q6_K", kSuperBlock, 2 + kSuperBlock / 2 + kSuperBlock / 4 + kSuperBlock / 16}},
    {15, {"Q8_K", kSuperBlock, 4 + kSuperBlock + kSuperBlock / 8}},
    {16, {"IQ2_XXS", kSuperBlock, 2 + kSuperBlock / 4}},
    {17, {"IQ2_XS", kSuperBlock, 2 + kSuperBlock / 4 + kSuperBlock / 32}},
    {18, {"IQ3_XXS", kSuperBlock, 2 + kSuperBlock / 4 + kSuperBlock / 8}},
    {19, {"IQ1_S", kSuperBlock, 2 + kSuperBlock / 8 + kSuperBlock / 16}},
    {20, {"IQ4_NL", 32, 2 + 16}},
    {21, {"IQ3_S", kSuperBlock, 2 + kSuperBlock / 4 + kSuperBlock / 8 + kSuperBlock / 32 + 4}},
    {22, {"IQ2_S", kSuperBlock, 2 + kSuperBlock / 4 + kSuperBlock / 16}},
    {23, {"IQ4_XS", kSuperBlock, 2 + 2 + kSuperBlock / 2 + kSuperBlock / 64}},
    {24, {"I8", 1, 1}},
    {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},
    {27, {"I64", 1, 8}},
    {28, {"F64", 1, 8}},
    {29, {"IQ1_M", kSuperBlock, kSuperBlock / 8 + kSuperBlock / 16 + kSuperBlock / 32}},
    {30, {"BF16", 1, 2}},
    {34, {"TQ1_0", kSuperBlock, 2 + 4 * 13}},
    {35, {"TQ2_0", kSuperBlock, 2 + 64}},
    {39, {"MXFP4", 32, 1 + 16}},
    {40, {"NVFP4", 64, 4 + 32}},
    {41, {"Q1_0", 128, 2 + 16}},
}};

}  // namespace

const GgmlTypeTraits* ggml_type_traits(std::uint32_t type_id) {
  for (const auto& entry : kTypes) {
    if (entry.id == type_id) return &entry.traits;
  }
  return nullptr;
}

std::string ggml_type_name(std::uint32_t type_id) {
  const auto* traits = ggml_type_traits(type_id);
  return traits != nullptr ? traits->name : "unknown type " + std::to_string(type_id);
}

}  // namespace mlx_cpp::gguf
