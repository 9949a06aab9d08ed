#include "io/gguf/dequantize.h"

#include <cstring>

#include "io/error.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"

namespace mlx_cpp::gguf {

float half_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1F;
  std::uint32_t mantissa = bits & 0x3FF;
  std::uint32_t result;
  if (exponent == 0x1F) {  // inf / NaN: keep the payload
    result = sign | 0x7F800000 | (mantissa << 13);
  } else if (exponent != 0) {
    result = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    result = sign;
  } else {  // subnormal half: normalise into a float32 normal
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FF;
    result = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &result, sizeof(value));
  return value;
}

float bfloat16_to_float(std::uint16_t bits) {
  std::uint32_t widened = static_cast<std::uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

namespace {
BlockDecoder block_decoder(std::uint32_t type_id) {
  if (auto decoder = legacy_block_decoder(type_id)) return decoder;
  return k_quant_block_decoder(type_id);
}
}  // namespace

bool can_dequantize(std::uint32_t type_id) {
  return block_decoder(type_id) != nullptr;
}

void dequantize(std::uint32_t type_id, std::span<const std::uint8_t> bytes, std::span<float> out) {
  auto decoder = block_decoder(type_id);
  if (decoder == nullptr) {
    throw Error("[gguf] cannot dequantize " + ggml_type_name(type_id) +
                ": supported types are F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, "
                "Q3_K, Q4_K, Q5_K, Q6_K, Q8_K");
  }
  const auto& traits = *ggml_type_traits(type_id);
  if (out.size() % traits.block_size != 0 ||
      bytes.size() != out.size() / traits.block_size * traits.type_size) {
    throw Error("[gguf] dequantize " + std::string(traits.name) + ": " +
                std::to_string(bytes.size()) + " bytes do not hold " + std::to_string(out.size()) +
                " elements");
  }
  std::size_t block_count = out.size() / traits.block_size;
  for (std::size_t block = 0; block < block_count; ++block) {
    decoder(bytes.data() + block * traits.type_size, out.data() + block * traits.block_size);
  }
}

std::vector<float> dequantize_tensor(const GgufFile& file, const TensorInfo& tensor) {
  std::vector<float> values(tensor.element_count);
  try {
    dequantize(tensor.type, file.tensor_bytes(tensor), values);
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + " (tensor " + tensor.name + ")");
  }
  return values;
}

}  // namespace mlx_cpp::gguf
