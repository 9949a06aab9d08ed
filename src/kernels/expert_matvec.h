#pragma once
// The rows of one decode step's chosen experts, computed as MLX's CPU
// gather_qmm computes them for bfloat16 (its scalar _qmm_t: every
// multiply and add rounded to bfloat16, the sum accumulated in bfloat16, k
// in order), so that the result is bit for bit the stock op's; vectorized
// across output rows instead of across k. Internal to the kernels layer
// (kernels.h has the op).
#include <cstddef>
#include <cstdint>

namespace mlx_cpp::kernels::expert_matvec {

// One expert's projection of one input row: out[n] for n in [first, last),
// each row n of `w` (bits-wide codes, 32 / bits per little-endian uint32
// word, lowest first) with its groups' scales and biases. All bfloat16 as
// raw bits.
struct Job {
  const uint16_t* x;       // [K]
  const uint32_t* w;       // [N, K * bits / 32]
  const uint16_t* scales;  // [N, K / group_size]
  const uint16_t* biases;  // [N, K / group_size]
  uint16_t* out;           // [N]
  int K = 0;
  int group_size = 0;
  int bits = 0;
};

void rows_scalar(const Job& job, int first, int last);
void rows_avx2(const Job& job, int first, int last);
void rows_avx512(const Job& job, int first, int last);

}  // namespace mlx_cpp::kernels::expert_matvec
