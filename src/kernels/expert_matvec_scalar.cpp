// The portable form of expert_matvec.h: one row at a time.
#include <cmath>
#include <cstring>

#include "kernels/expert_matvec.h"

namespace mlx_cpp::kernels::expert_matvec {
namespace {

float from_bf16(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// float → bfloat16 → float as MLX rounds: to nearest even, NaN canonical.
float round_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if (std::isnan(v)) {
    u = 0x7FC00000u;
  } else {
    u += ((u >> 16) & 1u) + 0x7FFFu;
    u &= 0xFFFF0000u;
  }
  std::memcpy(&v, &u, sizeof v);
  return v;
}

}  // namespace

void rows_scalar(const Job& job, int first, int last) {
  const int per_word = 32 / job.bits, words = job.K / per_word, groups = job.K / job.group_size;
  const uint32_t mask = (1u << job.bits) - 1u;
  for (int n = first; n < last; ++n) {
    const uint32_t* row = job.w + static_cast<std::size_t>(n) * words;
    float sum = 0.0f;
    for (int g = 0; g < groups; ++g) {
      const float scale = from_bf16(job.scales[static_cast<std::size_t>(n) * groups + g]);
      const float bias = from_bf16(job.biases[static_cast<std::size_t>(n) * groups + g]);
      for (int k = g * job.group_size; k < (g + 1) * job.group_size; ++k) {
        const uint32_t code = (row[k / per_word] >> ((k % per_word) * job.bits)) & mask;
        const float weight = round_bf16(round_bf16(scale * static_cast<float>(code)) + bias);
        sum = round_bf16(sum + round_bf16(from_bf16(job.x[k]) * weight));
      }
    }
    uint32_t u;
    std::memcpy(&u, &sum, sizeof u);
    job.out[n] = static_cast<uint16_t>(u >> 16);
  }
}

}  // namespace mlx_cpp::kernels::expert_matvec
