// dense_matmul_fast against the stock matmul (float64-exact products are
// not needed: both sum float32 products, in different orders) on random
// inputs of several shapes, batched and not; half-precision operands
// against float32 products of the same values, rounded once, at decode and
// prefill shapes, decode rows giving the same bits alone and in a batch;
// other dtypes take the stock op itself; malformed calls are refused with
// the op's name. The machine's OpenBLAS must be found: CI installs it
// (deps/debian-packages.txt), so a missing library fails here rather than
// silently testing the fallback.
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

TEST(DenseMatmulFast, HalfPrecisionIsFloat32ProductsRoundedOnce) {
  struct Case {
    mx::Shape x;
    int out;
  };
  int seed = 11;
  for (auto dtype : {mx::bfloat16, mx::float16}) {
    testing::ErrorReport report(dtype == mx::bfloat16 ? "dense_matmul_fast vs float32 (bfloat16)"
                                                      : "dense_matmul_fast vs float32 (float16)");
    // Decode shapes (one token per row, a few rows; 37 outputs leave a
    // partial block of weight rows, 70 inputs a partial vector) and prefill
    // shapes (sgemm; 8 outputs are fewer than one widened block).
    for (const auto& c : std::vector<Case>{{{1, 1, 576}, 37},
                                           {{5, 1, 256}, 1024},
                                           {{3, 70}, 100},
                                           {{1, 24, 576}, 1536},
                                           {{1, 20, 64}, 8},
                                           {{2, 9, 128}, 77}}) {
      const int in = c.x.back();
      auto x = random_normal(c.x, dtype, 1.0f, seed++);
      auto w = random_normal({c.out, in}, dtype, 1.0f / std::sqrt(float(in)), seed++);
      auto fast = dense_matmul_fast(x, w);
      ASSERT_EQ(fast.dtype(), dtype);
      auto reference =
          mx::matmul(mx::astype(x, mx::float32), mx::transpose(mx::astype(w, mx::float32)));
      ASSERT_EQ(fast.shape(), reference.shape());
      auto error = measure_error(mx::astype(fast, mx::float32), reference);
      report.add(error);
      // One rounding to the type (2^-9 relative for bfloat16, 2^-12 for
      // float16) of each output, against the largest.
      EXPECT_LT(error.max_rel, dtype == mx::bfloat16 ? 4e-3 : 5e-4)
          << "x " << c.x << " out " << c.out;
    }
  }
}

TEST(DenseMatmulFast, HalfPrecisionDecodeRowsAreTheSameAloneAndBatched) {
  for (auto dtype : {mx::bfloat16, mx::float16}) {
    auto batch = random_normal({6, 1, 320}, dtype, 1.0f, 41);
    auto w = random_normal({200, 320}, dtype, 0.05f, 42);
    auto together = dense_matmul_fast(batch, w);
    for (int row = 0; row < 6; ++row) {
      auto alone = dense_matmul_fast(mx::slice(batch, {row, 0, 0}, {row + 1, 1, 320}), w);
      auto in_batch = mx::slice(together, {row, 0, 0}, {row + 1, 1, 200});
      EXPECT_TRUE(mx::array_equal(alone, in_batch).item<bool>()) << "row " << row;
    }
  }
}

TEST(DenseMatmulFast, OtherDtypesAreTheStockOp) {
  auto x = random_normal({3, 64}, mx::float32, 1.0f, 5);
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
