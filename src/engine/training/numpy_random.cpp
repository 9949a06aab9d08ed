#include "engine/training/numpy_random.h"

#include <numeric>
#include <utility>

namespace mlx_cpp {

std::uint64_t NumpyRandom::interval(std::uint64_t max) {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  for (int shift = 1; shift < 64; shift *= 2) mask |= mask >> shift;
  std::uint64_t value = 0;
  if (max <= 0xffffffffULL) {
    do {
      value = generator_() & mask;
    } while (value > max);
    return value;
  }
  do {
    const std::uint64_t high = generator_();
    value = ((high << 32) | generator_()) & mask;
  } while (value > max);
  return value;
}

std::vector<int> NumpyRandom::permutation(int n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int i = n - 1; i >= 1; --i) std::swap(order[i], order[interval(i)]);
  return order;
}

}  // namespace mlx_cpp
