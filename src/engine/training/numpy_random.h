#pragma once
// numpy's legacy global generator (np.random.seed(s) then
// np.random.permutation(n)), which mlx-lm's trainer shuffles its batches
// with: MT19937 seeded as init_genrand(s), and a Fisher-Yates shuffle whose
// bounded draws mask a 32-bit output and reject values past the bound.
// Matching it gives the batch order mlx_lm.lora gives for the same seed.
#include <cstdint>
#include <random>
#include <vector>

namespace mlx_cpp {

class NumpyRandom {
 public:
  explicit NumpyRandom(std::uint32_t seed) : generator_(seed) {}
  // np.random.permutation(n): 0 … n-1 shuffled.
  std::vector<int> permutation(int n);

 private:
  // numpy's random_interval: uniform in [0, max].
  std::uint64_t interval(std::uint64_t max);
  std::mt19937 generator_;
};

}  // namespace mlx_cpp
