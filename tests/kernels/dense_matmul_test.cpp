// dense_matmul_fast against the stock matmul (float64-exact products are
// not needed: both sum float32 products, in different orders) on random
// inputs of several shapes, batched and not; other dtypes take the stock op
// itself; malformed calls are refused with the op's name. The machine's
// OpenBLAS must be found: CI installs it (deps/debian-packages.txt), so a
// missing library fails here rather than silently testing the fallback.
#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;
using testing::measure_error;
using testing::random_normal;

TEST(DenseMatmulFast, FindsOpenBlas) {
  EXPECT_TRUE(dense_matmul_available());
}

TEST(DenseMatmulFast, MatchesTheStockMatmul) {
  testing::ErrorReport report("dense_matmul_fast vs matmul (float32)");
  struct Case {
    mx::Shape x;
    int out;
  };
  int seed = 1;
  for (const auto& c : std::vector<Case>{{{1, 1, 64}, 32},
                                         {{1, 7, 768}, 1152},
                                         {{2, 19, 256}, 77},
                                         {{33, 3072}, 768},
                                         {{5, 1, 3}, 1}}) {
    const int in = c.x.back();
    auto x = random_normal(c.x, mx::float32, 1.0f, seed++);
    auto w = random_normal({c.out, in}, mx::float32, 1.0f / std::sqrt(float(in)), seed++);
    auto fast = dense_matmul_fast(x, w);
    auto stock = mx::matmul(x, mx::transpose(w));
    ASSERT_EQ(fast.shape(), stock.shape());
    ASSERT_EQ(fast.dtype(), mx::float32);
    auto error = measure_error(fast, stock);
    report.add(error);
    // float32 sums of `in` terms in another order: a few ulps of the
    // largest output.
    EXPECT_LT(error.max_rel, 1e-5) << "x " << c.x << " out " << c.out;
  }
}

TEST(DenseMatmulFast, OtherDtypesAreTheStockOp) {
  auto x = random_normal({3, 64}, mx::bfloat16, 1.0f, 5);
  auto w = random_normal({16, 64}, mx::bfloat16, 0.1f, 6);
  EXPECT_TRUE(
      mx::array_equal(dense_matmul_fast(x, w), mx::matmul(x, mx::transpose(w))).item<bool>());
}

TEST(DenseMatmulFast, RefusesMismatchedShapes) {
  auto x = random_normal({3, 64}, mx::float32, 1.0f, 7);
  auto w = random_normal({16, 32}, mx::float32, 1.0f, 8);
  EXPECT_THROW(
      {
        try {
          dense_matmul_fast(x, w);
        } catch (const std::invalid_argument& error) {
          EXPECT_NE(std::string(error.what()).find("dense_matmul_fast"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
}

}  // namespace
}  // namespace mlx_cpp::kernels
