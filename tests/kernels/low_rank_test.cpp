// low_rank_update_fast against the sums from MLX's ops (float32, rounded
// once) on random inputs of several shapes, dtypes and term layouts,
// under every SIMD level; a row's result does not depend on the other
// rows of the call; malformed calls are refused with the op's name.
#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;
using testing::measure_error;
using testing::random_normal;

struct Case {
  int batch, length, in, out, rank;
  mx::Dtype dtype;
};

std::vector<mx::array> factors_for(int in, int out, int rank, int pairs, int seed) {
  std::vector<mx::array> factors;
  for (int p = 0; p < pairs; ++p) {
    // aᵀ [r, in]
    factors.push_back(
        random_normal({rank, in}, mx::float32, 1.0f / std::sqrt(float(in)), seed + p));
    factors.push_back(random_normal({rank, out}, mx::float32, 0.05f, seed + 10 + p));
  }
  return factors;
}

// The sums from MLX's ops, row by row, in float32, rounded once.
mx::array reference(const mx::array& x, const mx::array& y, const std::vector<mx::array>& factors,
                    const std::vector<LowRankTerm>& terms) {
  const int in = x.shape(-1), out = y.shape(-1);
  auto rows_x = mx::reshape(mx::astype(x, mx::float32), {-1, in});
  std::vector<mx::array> rows;
  for (int row = 0; row < rows_x.shape(0); ++row) {
    auto sum = mx::reshape(
        mx::slice(mx::reshape(mx::astype(y, mx::float32), {-1, out}), {row, 0}, {row + 1, out}),
        {1, out});
    for (const auto& term : terms) {
      if (row < term.row_begin || row >= term.row_end) continue;
      auto x_row = mx::slice(rows_x, {row, 0}, {row + 1, in});
      auto delta = mx::matmul(mx::matmul(x_row, mx::transpose(factors[2 * term.factors])),
                              factors[2 * term.factors + 1]);
      sum = mx::add(sum, mx::multiply(mx::array(term.scale), delta));
    }
    rows.push_back(sum);
  }
  return mx::astype(mx::reshape(mx::concatenate(rows, 0), y.shape()), y.dtype());
}

TEST(LowRankUpdateFast, MatchesStockUnderEveryIsa) {
  testing::ErrorReport report("low_rank_update_fast");
  for (const Case c : {Case{1, 1, 64, 48, 4, mx::bfloat16}, Case{5, 1, 576, 1536, 8, mx::bfloat16},
                       Case{1, 13, 128, 96, 2, mx::float32}, Case{4, 3, 96, 40, 16, mx::float16}}) {
    auto x = random_normal({c.batch, c.length, c.in}, c.dtype, 1.0f, 1);
    auto y = random_normal({c.batch, c.length, c.out}, c.dtype, 1.0f, 2);
    auto factors = factors_for(c.in, c.out, c.rank, 2, 3);
    const int rows = c.batch * c.length;
    // Some rows with no term, some with one, one with two (a stack).
    std::vector<LowRankTerm> terms{{0, rows / 2 + 1, 0, 2.0f}, {rows - 1, rows, 1, 0.5f}};
    if (rows > 2) terms.push_back({1, 2, 1, 20.0f});
    testing::for_each_isa([&](IsaLevel) {
      auto fast = low_rank_update_fast(x, y, factors, terms, mx::Device::cpu);
      auto stock = reference(x, y, factors, terms);
      auto stats = measure_error(fast, stock);
      report.add(stats);
      EXPECT_LE(stats.max_rel, testing::rounding_tolerance(c.dtype, 1, 1e-5));
    });
  }
}

TEST(LowRankUpdateFast, EachRowIsItsOwn) {
  auto x = random_normal({6, 1, 80}, mx::bfloat16, 1.0f, 4);
  auto y = random_normal({6, 1, 72}, mx::bfloat16, 1.0f, 5);
  auto factors = factors_for(80, 72, 8, 1, 6);
  auto all = low_rank_update_fast(x, y, factors, {{0, 6, 0, 3.0f}});
  for (int row = 0; row < 6; ++row) {
    auto alone = low_rank_update_fast(mx::slice(x, {row, 0, 0}, {row + 1, 1, 80}),
                                      mx::slice(y, {row, 0, 0}, {row + 1, 1, 72}), factors,
                                      {{0, 1, 0, 3.0f}});
    EXPECT_TRUE(mx::array_equal(alone, mx::slice(all, {row, 0, 0}, {row + 1, 1, 72})).item<bool>())
        << "row " << row;
  }
  // Rows without a term are y's.
  auto untouched = low_rank_update_fast(x, y, factors, {{2, 3, 0, 3.0f}});
  EXPECT_TRUE(mx::array_equal(mx::slice(untouched, {0, 0, 0}, {2, 1, 72}),
                              mx::slice(y, {0, 0, 0}, {2, 1, 72}))
                  .item<bool>());
}

TEST(LowRankUpdateFast, RefusesMalformedCalls) {
  auto x = mx::zeros({2, 1, 8}, mx::bfloat16);
  auto y = mx::zeros({2, 1, 4}, mx::bfloat16);
  auto good = factors_for(8, 4, 2, 1, 7);
  auto expect_refused = [&](const std::vector<mx::array>& factors,
                            const std::vector<LowRankTerm>& terms) {
    try {
      low_rank_update_fast(x, y, factors, terms);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("[low_rank_update_fast]"), std::string::npos);
    }
  };
  expect_refused({good[0]}, {});                                     // unpaired
  expect_refused({mx::astype(good[0], mx::bfloat16), good[1]}, {});  // not float32
  expect_refused({mx::zeros({2, 9}), good[1]}, {});                  // wrong in
  expect_refused(good, {{0, 3, 0, 1.0f}});                           // rows past the end
  expect_refused(good, {{0, 1, 1, 1.0f}});                           // no such pair
}

}  // namespace
}  // namespace mlx_cpp::kernels
