#pragma once
// Packed rows of a KV cache as float32, one row at a time, in one table
// per instruction set (the attention kernel's inner loop over packed
// caches: a decode step turns every cached value into a float once).
//
// A row holds `width` codes of `bits` bits (2, 3, 4 or 8) packed LSB first
// in 32-bit words, value i at bits [i*bits, (i+1)*bits) of the stream
// (MLX's affine layout for 2, 4 and 8 bits; TurboQuant's for all), in
// groups of `group` values (a multiple of 16) sharing their factors.
#include <cstdint>

namespace mlx_cpp::kernels {

struct PackedRowDecoders {
  // dst[i] = scales[g] * code_i + biases[g], g = i / group (MLX's affine
  // dequantization, in float32).
  void (*affine)(const std::uint32_t* words, int bits, int width, int group, const float* scales,
                 const float* biases, float* dst);
  // dst[i] = table[code_i] * factors[g]: exactly that product (one
  // rounding), so TurboQuant's rows equal its codec's.
  void (*table)(const std::uint32_t* words, int bits, int width, int group, const float* table,
                const float* factors, float* dst);
};

// The decoders of the active instruction set (cpu_features.h).
const PackedRowDecoders& packed_row_decoders();

}  // namespace mlx_cpp::kernels
