#pragma once
// Shared pieces of the 256-element K-quant super-block layouts (ggml-common.h),
// used by both the dequantizer and the exact MLX affine mapping.
#include <array>
#include <cstdint>
#include <cstring>

namespace mlx_cpp::gguf {

inline constexpr int kSuperBlockSize = 256;

inline std::uint16_t load_half_bits(const std::uint8_t* bytes) {
  std::uint16_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

// Q4_K / Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes:
// bytes 0-3 hold scales 0-3 (low 6 bits) and the top bits of scales 4-7,
// bytes 4-7 the same for mins, bytes 8-11 the low nibbles of scales/mins 4-7.
struct ScalesAndMins {
  std::array<std::uint8_t, 8> scales;
  std::array<std::uint8_t, 8> mins;
};

inline ScalesAndMins unpack_scales_and_mins(const std::uint8_t* packed) {
  ScalesAndMins result{};
  for (int j = 0; j < 4; ++j) {
    result.scales[j] = packed[j] & 0x3F;
    result.mins[j] = packed[4 + j] & 0x3F;
    result.scales[4 + j] = (packed[8 + j] & 0x0F) | ((packed[j] >> 2) & 0x30);
    result.mins[4 + j] = (packed[8 + j] >> 4) | ((packed[4 + j] >> 2) & 0x30);
  }
  return result;
}

// Q4_K / Q5_K: element e of the super-block (sub-block e / 32) takes its low
// nibble from qs[(e / 64) * 32 + e % 32], shifted by 4 for the odd sub-block.
inline int k_quant_low_nibble(const std::uint8_t* qs, int element) {
  int chunk = element / 64;
  int shift = ((element / 32) % 2) * 4;
  return (qs[chunk * 32 + element % 32] >> shift) & 0x0F;
}

// Q5_K: the fifth bit of element e is bit (e / 32) of qh[e % 32].
inline int k_quant_fifth_bit(const std::uint8_t* qh, int element) {
  return (qh[element % 32] >> (element / 32)) & 1;
}

// Byte offsets inside one Q4_K block: d, dmin, scales[12], qs[128]; Q5_K
// shares d, dmin and scales and adds qh[32] before its qs[128].
inline constexpr int kQ4KScales = 4, kQ4KQuants = 16;
inline constexpr int kQ5KHigh = 16, kQ5KQuants = 48;

}  // namespace mlx_cpp::gguf
