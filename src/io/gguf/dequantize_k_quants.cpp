// Block decoders for the 256-element K-quants (Q2_K to Q8_K), mirroring the
// float32 arithmetic of gguf.quants. Q8_K has no decoder in gguf; it follows
// ggml's dequantize_row_q8_K (d * q).
#include "io/gguf/dequantize.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/k_quant_layout.h"

namespace mlx_cpp::gguf {
namespace {

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
void decode_q2_k(const std::uint8_t* block, float* out) {
  const std::uint8_t* scales = block;
  const std::uint8_t* qs = block + 16;
  float d = half_to_float(load_half_bits(block + 80));
  float dmin = half_to_float(load_half_bits(block + 82));
  for (int e = 0; e < kSuperBlockSize; ++e) {
    int sub = e / 16;
    float scale = d * static_cast<float>(scales[sub] & 0x0F);
    float minimum = dmin * static_cast<float>(scales[sub] >> 4);
    int shift = ((e % 128) / 32) * 2;
    int q = (qs[(e / 128) * 32 + e % 32] >> shift) & 3;
    out[e] = scale * static_cast<float>(q) - minimum;
  }
}

// Q3_K: hmask[32], qs[64], scales[12] (sixteen 6-bit values), d.
void decode_q3_k(const std::uint8_t* block, float* out) {
  const std::uint8_t* hmask = block;
  const std::uint8_t* qs = block + 32;
  const std::uint8_t* packed = block + 96;
  float d = half_to_float(load_half_bits(block + 108));
  float scales[16];
  for (int i = 0; i < 16; ++i) {
    int low = (packed[i % 8] >> (4 * (i / 8))) & 0x0F;
    int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 0x03;
    scales[i] = d * static_cast<float>((low | (high << 4)) - 32);
  }
  for (int e = 0; e < kSuperBlockSize; ++e) {
    int shift = ((e % 128) / 32) * 2;
    int low_bits = (qs[(e / 128) * 32 + e % 32] >> shift) & 3;
    int high_bit = (hmask[e % 32] >> (e / 32)) & 1;
    int q = low_bits - ((high_bit ^ 1) << 2);  // a clear hmask bit subtracts 4
    out[e] = scales[e / 16] * static_cast<float>(q);
  }
}

// Q4_K and Q5_K share their layout up to Q5_K's extra high bits.
template <bool kFiveBits>
void decode_q4_k_or_q5_k(const std::uint8_t* block, float* out) {
  float d = half_to_float(load_half_bits(block));
  float dmin = half_to_float(load_half_bits(block + 2));
  auto unpacked = unpack_scales_and_mins(block + kQ4KScales);
  const std::uint8_t* qs = block + (kFiveBits ? kQ5KQuants : kQ4KQuants);
  for (int e = 0; e < kSuperBlockSize; ++e) {
    int sub = e / 32;
    float scale = d * static_cast<float>(unpacked.scales[sub]);
    float minimum = dmin * static_cast<float>(unpacked.mins[sub]);
    int q = k_quant_low_nibble(qs, e);
    if constexpr (kFiveBits) q |= k_quant_fifth_bit(block + kQ5KHigh, e) << 4;
    out[e] = scale * static_cast<float>(q) - minimum;
  }
}

// Q6_K: ql[128] (low nibbles), qh[64] (2-bit highs), scales[16] int8, d.
void decode_q6_k(const std::uint8_t* block, float* out) {
  const std::uint8_t* ql = block;
  const std::uint8_t* qh = block + 128;
  const auto* scales = reinterpret_cast<const std::int8_t*>(block + 192);
  float d = half_to_float(load_half_bits(block + 208));
  for (int e = 0; e < kSuperBlockSize; ++e) {
    int half = e / 128;
    int within = e % 128;
    int low = (ql[half * 64 + within % 64] >> ((within / 64) * 4)) & 0x0F;
    int high = (qh[half * 32 + within % 32] >> ((within / 32) * 2)) & 0x03;
    float scale = d * static_cast<float>(scales[e / 16]);
    out[e] = scale * static_cast<float>((low | (high << 4)) - 32);
  }
}

// Q8_K: d (float32), qs[256] int8, bsums[16] (unused for decoding).
void decode_q8_k(const std::uint8_t* block, float* out) {
  float d;
  std::memcpy(&d, block, sizeof(d));
  for (int e = 0; e < kSuperBlockSize; ++e) {
    out[e] = d * static_cast<float>(static_cast<std::int8_t>(block[4 + e]));
  }
}

}  // namespace

BlockDecoder k_quant_block_decoder(std::uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kQ2_K:
      return decode_q2_k;
    case GgmlType::kQ3_K:
      return decode_q3_k;
    case GgmlType::kQ4_K:
      return decode_q4_k_or_q5_k<false>;
    case GgmlType::kQ5_K:
      return decode_q4_k_or_q5_k<true>;
    case GgmlType::kQ6_K:
      return decode_q6_k;
    case GgmlType::kQ8_K:
      return decode_q8_k;
    default:
      return nullptr;
  }
}

}  // namespace mlx_cpp::gguf
