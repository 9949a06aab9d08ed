// The portable packed-row decoders, and the choice by instruction set.
#include "kernels/packed_row_decoders.h"

#include "kernels/cpu_features.h"

namespace mlx_cpp::kernels {

#if defined(__x86_64__) || defined(__i386__)
const PackedRowDecoders& avx2_packed_row_decoders();
const PackedRowDecoders& avx512_packed_row_decoders();
#endif

namespace {

std::uint32_t code_at(const std::uint32_t* words, int i, int bits) {
  const int bit = i * bits, word = bit / 32, shift = bit % 32;
  std::uint64_t value = words[word] >> shift;
  if (shift + bits > 32) value |= static_cast<std::uint64_t>(words[word + 1]) << (32 - shift);
  return static_cast<std::uint32_t>(value & ((1u << bits) - 1));
}

void affine(const std::uint32_t* words, int bits, int width, int group, const float* scales,
            const float* biases, float* dst) {
  for (int i = 0; i < width; ++i)
    dst[i] = scales[i / group] * static_cast<float>(code_at(words, i, bits)) + biases[i / group];
}

void table(const std::uint32_t* words, int bits, int width, int group, const float* table,
           const float* factors, float* dst) {
  for (int i = 0; i < width; ++i) dst[i] = table[code_at(words, i, bits)] * factors[i / group];
}

const PackedRowDecoders kPortable{affine, table};

}  // namespace

const PackedRowDecoders& packed_row_decoders() {
#if defined(__x86_64__) || defined(__i386__)
  if (active_level() >= IsaLevel::avx512) return avx512_packed_row_decoders();
  if (active_level() >= IsaLevel::avx2) return avx2_packed_row_decoders();
#endif
  return kPortable;
}

}  // namespace mlx_cpp::kernels
