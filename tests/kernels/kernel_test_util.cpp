#include "kernel_test_util.h"

#include <algorithm>
#include <iostream>

namespace mlx_cpp::kernels::testing {

namespace mx = mlx::core;

ErrorStats measure_error(const mx::array& actual, const mx::array& expected) {
  auto a = mx::astype(actual, mx::float32);
  auto e = mx::astype(expected, mx::float32);
  auto max_abs = mx::max(mx::abs(mx::subtract(a, e)));
  auto max_expected = mx::max(mx::abs(e));
  mx::eval(max_abs, max_expected);
  ErrorStats stats;
  stats.max_abs = max_abs.item<float>();
  stats.max_expected = max_expected.item<float>();
  stats.max_rel = stats.max_expected > 0 ? stats.max_abs / stats.max_expected : stats.max_abs;
  return stats;
}

ErrorReport::~ErrorReport() {
  std::cout << "[error bound] " << name_ << ": " << cases_ << " cases, max abs error "
            << worst_.max_abs << ", max error relative to max |expected| " << worst_.max_rel
            << "\n";
}

void ErrorReport::add(const ErrorStats& stats) {
  ++cases_;
  worst_.max_abs = std::max(worst_.max_abs, stats.max_abs);
  worst_.max_rel = std::max(worst_.max_rel, stats.max_rel);
  worst_.max_expected = std::max(worst_.max_expected, stats.max_expected);
}

double rounding_tolerance(mx::Dtype dtype, int roundings, double float32_bound) {
  if (dtype == mx::bfloat16) return roundings / 128.0;
  if (dtype == mx::float16) return roundings / 1024.0;
  return float32_bound;
}

void for_each_isa(const std::function<void(IsaLevel)>& check) {
  const IsaLevel native = detected_level();
  for (IsaLevel level : available_levels()) {
    set_isa_limit(level);
    try {
      check(level);
    } catch (...) {
      set_isa_limit(native);
      throw;
    }
  }
  set_isa_limit(native);
}

bool gpu_available() {
  try {
    return mx::is_available(mx::Device::gpu);
  } catch (const std::exception&) {
    return false;
  }
}

mx::array random_normal(const mx::Shape& shape, mx::Dtype dtype, float scale, int seed) {
  auto key = mx::random::key(seed);
  return mx::astype(
      mx::multiply(mx::random::normal(shape, mx::float32, 0.0f, 1.0f, key), mx::array(scale)),
      dtype);
}

}  // namespace mlx_cpp::kernels::testing
