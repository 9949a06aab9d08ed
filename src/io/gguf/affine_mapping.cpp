#include "io/gguf/affine_mapping.h"

#include <mlx/ops.h>
#include <mlx/types/half_types.h>

#include <vector>

#include "io/error.h"
#include "io/gguf/dequantize.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/k_quant_layout.h"

namespace mlx_cpp::gguf {
namespace {

constexpr int kGroup = 32;

// One 32-element group in affine form.
struct AffineGroup {
  float scale;
  float bias;
  std::uint8_t q[kGroup];
};

int legacy_nibble(const std::uint8_t* packed, int index) {
  return index < 16 ? packed[index] & 0x0F : packed[index - 16] >> 4;
}

int legacy_fifth_bit(const std::uint8_t* high_bits, int index) {
  std::uint32_t bits;
  std::memcpy(&bits, high_bits, sizeof(bits));
  return static_cast<int>((bits >> index) & 1);
}

// Writes the groups of one block into `groups`; returns how many it wrote.
int block_to_groups(GgmlType type, const std::uint8_t* block, AffineGroup* groups) {
  float d = half_to_float(load_half_bits(block));
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1: {
      bool has_min = type == GgmlType::kQ4_1;
      groups[0].scale = d;
      groups[0].bias = has_min ? half_to_float(load_half_bits(block + 2)) : -8.0f * d;
      const std::uint8_t* qs = block + (has_min ? 4 : 2);
      for (int i = 0; i < kGroup; ++i) groups[0].q[i] = legacy_nibble(qs, i);
      return 1;
    }
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1: {
      bool has_min = type == GgmlType::kQ5_1;
      groups[0].scale = d;
      groups[0].bias = has_min ? half_to_float(load_half_bits(block + 2)) : -16.0f * d;
      const std::uint8_t* qh = block + (has_min ? 4 : 2);
      for (int i = 0; i < kGroup; ++i) {
        groups[0].q[i] = legacy_nibble(qh + 4, i) | (legacy_fifth_bit(qh, i) << 4);
      }
      return 1;
    }
    case GgmlType::kQ8_0:
      groups[0].scale = d;
      groups[0].bias = -128.0f * d;
      for (int i = 0; i < kGroup; ++i) {
        groups[0].q[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(block[2 + i]) + 128);
      }
      return 1;
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      bool five_bits = type == GgmlType::kQ5_K;
      float dmin = half_to_float(load_half_bits(block + 2));
      auto unpacked = unpack_scales_and_mins(block + kQ4KScales);
      const std::uint8_t* qs = block + (five_bits ? kQ5KQuants : kQ4KQuants);
      for (int sub = 0; sub < 8; ++sub) {
        groups[sub].scale = d * static_cast<float>(unpacked.scales[sub]);
        groups[sub].bias = -(dmin * static_cast<float>(unpacked.mins[sub]));
        for (int i = 0; i < kGroup; ++i) {
          int element = sub * kGroup + i;
          int q = k_quant_low_nibble(qs, element);
          if (five_bits) q |= k_quant_fifth_bit(block + kQ5KHigh, element) << 4;
          groups[sub].q[i] = static_cast<std::uint8_t>(q);
        }
      }
      return 8;
    }
    default:
      throw Error("[gguf] no exact affine form for " + ggml_type_name(static_cast<int>(type)));
  }
}

// Appends `bits`-wide values to a little-endian bit stream of uint32 words,
// the packing MLX's affine quantization uses.
class BitPacker {
 public:
  BitPacker(std::uint32_t* words, int bits) : words_(words), bits_(bits) {}
  void push(std::uint32_t value) {
    std::size_t word = position_ / 32;
    int offset = static_cast<int>(position_ % 32);
    words_[word] |= value << offset;
    if (offset + bits_ > 32) words_[word + 1] |= value >> (32 - offset);
    position_ += static_cast<std::size_t>(bits_);
  }

 private:
  std::uint32_t* words_;
  int bits_;
  std::size_t position_ = 0;
};

// float16 holds d and m of the legacy types (and -8 d, -128 d ...) exactly,
// halving what scales and biases cost to store and to read per token.
bool holds_exactly_in_float16(const std::vector<float>& values) {
  for (float value : values) {
    if (static_cast<float>(static_cast<mlx::core::float16_t>(value)) != value) return false;
  }
  return true;
}

}  // namespace

std::optional<int> exact_affine_bits(std::uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ4_K:
      return 4;
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ5_K:
      return 5;
    case GgmlType::kQ8_0:
      return 8;
    default:
      return std::nullopt;
  }
}

std::optional<AffineTensor> exact_affine(const GgufFile& file, const TensorInfo& tensor) {
  auto bits = exact_affine_bits(tensor.type);
  if (!bits || tensor.dims.size() != 2) return std::nullopt;
  const auto& traits = *ggml_type_traits(tensor.type);
  auto type = static_cast<GgmlType>(tensor.type);
  int rows = static_cast<int>(tensor.dims[1]);
  int cols = static_cast<int>(tensor.dims[0]);
  int groups_per_row = cols / kGroup;
  int words_per_row = cols * *bits / 32;
  std::vector<std::uint32_t> words(static_cast<std::size_t>(rows) * words_per_row, 0);
  std::vector<float> scales(static_cast<std::size_t>(rows) * groups_per_row);
  std::vector<float> biases(scales.size());
  auto bytes = file.tensor_bytes(tensor);
  std::size_t blocks_per_row = static_cast<std::size_t>(cols) / traits.block_size;
  std::vector<AffineGroup> groups(traits.block_size / kGroup);
  for (int row = 0; row < rows; ++row) {
    BitPacker packer(words.data() + static_cast<std::size_t>(row) * words_per_row, *bits);
    std::size_t group_index = static_cast<std::size_t>(row) * groups_per_row;
    for (std::size_t block = 0; block < blocks_per_row; ++block) {
      const auto* data = bytes.data() + (row * blocks_per_row + block) * traits.type_size;
      int count = block_to_groups(type, data, groups.data());
      for (int g = 0; g < count; ++g, ++group_index) {
        scales[group_index] = groups[g].scale;
        biases[group_index] = groups[g].bias;
        for (int i = 0; i < kGroup; ++i) packer.push(groups[g].q[i]);
      }
    }
  }
  using mlx::core::array;
  const auto dtype = holds_exactly_in_float16(scales) && holds_exactly_in_float16(biases)
                         ? mlx::core::float16
                         : mlx::core::float32;
  return AffineTensor{array(words.begin(), {rows, words_per_row}, mlx::core::uint32),
                      mlx::core::astype(array(scales.begin(), {rows, groups_per_row}), dtype),
                      mlx::core::astype(array(biases.begin(), {rows, groups_per_row}), dtype),
                      *bits, kGroup};
}

}  // namespace mlx_cpp::gguf
