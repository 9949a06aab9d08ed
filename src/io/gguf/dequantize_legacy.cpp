// Block decoders for the scalar types and the 32-element ("legacy") quants.
// Each mirrors the float32 arithmetic of gguf.quants exactly.
#include <cstring>

#include "io/gguf/dequantize.h"
#include "io/gguf/ggml_types.h"

namespace mlx_cpp::gguf {
namespace {

std::uint16_t load_u16(const std::uint8_t* bytes) {
  std::uint16_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

std::uint32_t load_u32(const std::uint8_t* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

void decode_f32(const std::uint8_t* block, float* out) {
  std::memcpy(out, block, sizeof(float));
}
void decode_f16(const std::uint8_t* block, float* out) {
  *out = half_to_float(load_u16(block));
}
void decode_bf16(const std::uint8_t* block, float* out) {
  *out = bfloat16_to_float(load_u16(block));
}

// Low nibbles hold elements 0-15, high nibbles 16-31.
int nibble(const std::uint8_t* packed, int index) {
  return index < 16 ? packed[index] & 0x0F : packed[index - 16] >> 4;
}

void decode_q4_0(const std::uint8_t* block, float* out) {  // d, qs[16]: d * (q - 8)
  float scale = half_to_float(load_u16(block));
  for (int i = 0; i < 32; ++i) out[i] = scale * static_cast<float>(nibble(block + 2, i) - 8);
}

void decode_q4_1(const std::uint8_t* block, float* out) {  // d, m, qs[16]: d * q + m
  float scale = half_to_float(load_u16(block));
  float minimum = half_to_float(load_u16(block + 2));
  for (int i = 0; i < 32; ++i) out[i] = scale * static_cast<float>(nibble(block + 4, i)) + minimum;
}

// The fifth bit of element i is bit i of the little-endian uint32 qh.
int five_bit(const std::uint8_t* high_bits, const std::uint8_t* packed, int index) {
  return nibble(packed, index) | static_cast<int>(((load_u32(high_bits) >> index) & 1) << 4);
}

void decode_q5_0(const std::uint8_t* block, float* out) {  // d, qh[4], qs[16]: d * (q - 16)
  float scale = half_to_float(load_u16(block));
  for (int i = 0; i < 32; ++i) {
    out[i] = scale * static_cast<float>(five_bit(block + 2, block + 6, i) - 16);
  }
}

void decode_q5_1(const std::uint8_t* block, float* out) {  // d, m, qh[4], qs[16]: d * q + m
  float scale = half_to_float(load_u16(block));
  float minimum = half_to_float(load_u16(block + 2));
  for (int i = 0; i < 32; ++i) {
    out[i] = scale * static_cast<float>(five_bit(block + 4, block + 8, i)) + minimum;
  }
}

void decode_q8_0(const std::uint8_t* block, float* out) {  // d, qs[32] int8: q * d
  float scale = half_to_float(load_u16(block));
  for (int i = 0; i < 32; ++i) {
    out[i] = static_cast<float>(static_cast<std::int8_t>(block[2 + i])) * scale;
  }
}

}  // namespace

BlockDecoder legacy_block_decoder(std::uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kF32:
      return decode_f32;
    case GgmlType::kF16:
      return decode_f16;
    case GgmlType::kBF16:
      return decode_bf16;
    case GgmlType::kQ4_0:
      return decode_q4_0;
    case GgmlType::kQ4_1:
      return decode_q4_1;
    case GgmlType::kQ5_0:
      return decode_q5_0;
    case GgmlType::kQ5_1:
      return decode_q5_1;
    case GgmlType::kQ8_0:
      return decode_q8_0;
    default:
      return nullptr;
  }
}

}  // namespace mlx_cpp::gguf
