#pragma once
// GGML block formats to float32, bit for bit as the `gguf` Python package's
// gguf.quants.dequantize computes them (same float32 operations in the same
// order; every product that precedes an addition is exact in float32, so
// fused multiply-adds could not change the result either).
#include <cstdint>
#include <span>
#include <vector>

namespace mlx_cpp::gguf {

class GgufFile;
struct TensorInfo;

// IEEE half and bfloat16 bit patterns to float32 (exact, NaN payloads kept).
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
bool can_dequantize(std::uint32_t type_id);

// Decodes whole blocks of `type_id` from `bytes` into `out`; `bytes` must hold
// exactly out.size() elements. Throws Error naming unsupported types.
void dequantize(std::uint32_t type_id, std::span<const std::uint8_t> bytes, std::span<float> out);

// One tensor of a GGUF file, as float32 in row-major order.
std::vector<float> dequantize_tensor(const GgufFile& file, const TensorInfo& tensor);

// Block decoders, one per family (dequantize_legacy.cpp, dequantize_k_quants.cpp).
using BlockDecoder = void (*)(const std::uint8_t* block, float* out);
BlockDecoder legacy_block_decoder(std::uint32_t type_id);
BlockDecoder k_quant_block_decoder(std::uint32_t type_id);

}  // namespace mlx_cpp::gguf
