#pragma once
// Helpers shared by the kernel tests: error measurement against a fallback
// and running a check under each SIMD level the machine supports.
#include <mlx/mlx.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"

namespace mlx_cpp::kernels::testing {

struct ErrorStats {
  double max_abs = 0.0;       // max |actual - expected|
  double max_rel = 0.0;       // max |actual - expected| / max |expected|
  double max_expected = 0.0;  // max |expected|
};

// Both arrays are cast to float32 before comparing; shapes must match.
ErrorStats measure_error(const mlx::core::array& actual, const mlx::core::array& expected);

// Keeps the worst error over many cases and prints it at the end, so test
// logs state the bounds that the assertions check.
class ErrorReport {
 public:
  explicit ErrorReport(std::string name) : name_(std::move(name)) {}
  ~ErrorReport();
  void add(const ErrorStats& stats);

 private:
  std::string name_;
  ErrorStats worst_;
  int cases_ = 0;
};

// Bound on max |actual - expected| / max |expected| for an output in
// `dtype`: `float32_bound` for float32, else `roundings` roundings of the
// 16-bit type, each counted as one ulp at the largest element (1/128 for
// bfloat16, 1/1024 for float16).
double rounding_tolerance(mlx::core::Dtype dtype, int roundings, double float32_bound);

// Runs `check` under each instruction-set level this CPU has (scalar up to
// the detected one), restoring the limit after.
void for_each_isa(const std::function<void(IsaLevel)>& check);

// Whether MLX sees a GPU here (a CUDA build on a machine with one).
bool gpu_available();

mlx::core::array random_normal(const mlx::core::Shape& shape, mlx::core::Dtype dtype, float scale,
                               int seed);

}  // namespace mlx_cpp::kernels::testing

// The GPU kernels' tests skip, saying why, where there is no GPU: they run in
// the GPU suite.
#define MLX_CPP_REQUIRE_GPU()                                                  \
  if (!::mlx_cpp::kernels::testing::gpu_available())                           \
  GTEST_SKIP() << "no GPU here: the GPU kernels are checked in the GPU suite " \
                  "(scripts/gpu/parity, docs/gpu.md)"
