#pragma once
// Exact carry of GGUF block quants into MLX's affine format, where the two
// coincide: every 32-element group of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and
// Q5_K is `scale * q + bias` with unsigned q, so the same numbers move over
// unchanged (no requantization error). Symmetric types get a shifted q and
// bias = -offset * d (Q8_0: q' = q + 128, bias = -128 d).
//
// Scales and biases are float16 when every one of a tensor's values fits
// exactly (the legacy types: d and m are float16, -8 d and -128 d too), as
// in the GGUF, else float32 (K-quants' d * sc does not fit). The numbers are
// exact either way: `scale * q + bias` evaluated in float32 equals the gguf
// formula element for element (only the sign of a zero can differ when
// d == 0). MLX's own dequantize computes in the scales' dtype, so with
// float16 scales it rounds each weight to float16; the own kernels
// (src/kernels) compute in float32.
#include <mlx/array.h>

#include <cstdint>
#include <optional>

namespace mlx_cpp::gguf {

class GgufFile;
struct TensorInfo;

struct AffineTensor {
  mlx::core::array weight;  // uint32 [rows, cols * bits / 32], little-endian bit stream
  mlx::core::array scales;  // float16 or float32 [rows, cols / group_size]
  mlx::core::array biases;  // same dtype as scales
  int bits;
  int group_size;
};

// The bits an exact carry would use for a GGML type, or nullopt when the type
// has no exact MLX affine equivalent (K-quants with 16-element groups, Q8_K).
std::optional<int> exact_affine_bits(std::uint32_t type_id);

// Carries a 2-D tensor of an exactly representable type; nullopt otherwise.
std::optional<AffineTensor> exact_affine(const GgufFile& file, const TensorInfo& tensor);

}  // namespace mlx_cpp::gguf
