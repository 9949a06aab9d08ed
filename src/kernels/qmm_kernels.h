#pragma once
// Internal interface between the quantized matmul primitive and its per-ISA
// kernels (scalar, AVX2, AVX-512). Everything here is plain data and
// function pointers so that the SIMD translation units can be compiled with
// their own target options without sharing inline code with the rest.
#include <cstddef>
#include <cstdint>

namespace mlx_cpp::kernels::qmm {

enum class ScalarType { float32, bfloat16, float16 };

// out[M, N] = x[M, K] @ dequant(w)^T with w = scale * q + bias per group of
// `group_size` consecutive k. The k order of x is the kernel's order (see
// IsaKernels::interleave); w's packing is MLX's: LSB-first along k.
struct Problem {
  const float* x;             // [M, K] float32, interleaved for the ISA
  const float* x_group_sums;  // [M, K / group_size] sums of x per group
  const std::uint8_t* w;      // [N, K * bits / 8]
  const void* scales;         // [N, K / group_size]
  const void* biases;         // [N, K / group_size]
  ScalarType scale_type;
  void* out;  // [M, N]
  ScalarType out_type;
  int M, N, K, group_size, bits;
};

struct IsaKernels {
  const char* name;
  // 4-bit kernels unpack `2 * interleave` weights at a time as the even ones
  // then the odd ones; x is stored in that order (1 = natural order).
  int interleave;
  // Columns per dequantized weight panel in gemm; gemm ranges start at
  // multiples of it.
  int column_block;
  // Rows [0, M) x columns [n_begin, n_end), streaming each weight once per
  // call; for few rows (decode).
  void (*gemv)(const Problem& p, int n_begin, int n_end);
  // Same contract, for many rows (prefill): weights are dequantized to a
  // float panel once and reused for all rows.
  void (*gemm)(const Problem& p, int n_begin, int n_end);
};

const IsaKernels& scalar_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();

// Helpers the kernels share, compiled for the baseline ISA.
void load_as_float(const void* src, ScalarType type, std::size_t offset, int count, float* dst);
void store_from_float(const float* src, int count, void* dst, ScalarType type, std::size_t offset);
// A per-thread buffer of at least `count` floats; `slot` tells apart the
// buffers one kernel needs at the same time.
float* thread_scratch(int slot, std::size_t count);

}  // namespace mlx_cpp::kernels::qmm
