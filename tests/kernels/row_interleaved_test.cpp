// Row-interleaved 4-, 6- and 8-bit weights (kernels.h, WeightLayout) give the results
// of the same weights in MLX's layout: under every SIMD level here (those
// without the interleaved kernels put the weights back in MLX's layout per
// call), every precision and arithmetic, decode and prefill shapes, groups
// 32/64/128, all scale dtypes; and the stock-op fallback (taken by the
// gradient) dequantizes them as MLX does.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "kernel_test_util.h"
#include "kernels/cpu_features.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {

namespace mx = mlx::core;
using testing::ErrorReport;
using testing::for_each_isa;
using testing::measure_error;
using testing::random_normal;

QuantizedWeights mlx_layout(int N, int K, int group_size, mx::Dtype scale_dtype, int seed,
                            int bits = 4) {
  auto q = mx::quantize(random_normal({N, K}, scale_dtype, 0.05f, seed), group_size, bits);
  mx::eval(q);
  return {q[0], q[1], q[2]};
}

TEST(RowInterleavedWeights, GiveTheResultsOfMlxLayout) {
  ErrorReport report("row-interleaved vs MLX layout, same kernels' settings");
  const mx::Dtype scale_dtypes[] = {mx::float32, mx::bfloat16, mx::float16};
  int seed = 4000;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (int K : {128, 384, 576}) {
        if (K % group_size != 0) continue;
        for (int M : {1, 3, 4, 6, 40}) {
          for (auto precision : {ActivationPrecision::int16, ActivationPrecision::float32}) {
            ++seed;
            const int N = 16 * (1 + seed % 5);
            auto mlx = mlx_layout(N, K, group_size, scale_dtypes[seed % 3], seed, bits);
            auto rows = to_row_interleaved(mlx, group_size, bits);
            ASSERT_EQ(rows.w.dtype(), mx::uint8);
            ASSERT_EQ(rows.w.shape(1), K * bits / 8);
            auto x = random_normal({M, K}, mx::float32, 1.0f, seed + 1);
            for_each_isa([&](IsaLevel level) {
              auto expected = quantized_matmuls_fast(x, {mlx}, group_size, bits, precision,
                                                     PrefillArithmetic::half)[0];
              auto actual = quantized_matmuls_fast(x, {rows}, group_size, bits, precision,
                                                   PrefillArithmetic::half)[0];
              auto stats = measure_error(actual, expected);
              report.add(stats);
              // The same exact integer dots and half-precision panels,
              // summed in another order.
              EXPECT_LE(stats.max_rel, 2e-6)
                  << "isa=" << level_name(level) << " bits=" << bits << " M=" << M << " N=" << N
                  << " K=" << K << " group=" << group_size;
            });
          }
        }
      }
    }
  }
}

// Where a float32 gemm reads the interleaved layout (AVX2), its panels hold
// the values MLX's layout gives and keep x's k order: prefill results are
// those of MLX's layout bit for bit.
TEST(RowInterleavedWeights, Float32PrefillIsMlxLayoutBitForBit) {
  int seed = 5000, checked = 0;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      ++seed;
      auto mlx = mlx_layout(48, 640, group_size, seed % 2 ? mx::bfloat16 : mx::float16, seed, bits);
      auto rows = to_row_interleaved(mlx, group_size, bits);
      auto x = random_normal({37, 640}, mx::float32, 1.0f, seed + 1);
      for_each_isa([&](IsaLevel level) {
        if (quantized_matmul_variant(bits, false, ActivationPrecision::int16,
                                     PrefillArithmetic::float32) !=
            "float32 gemm " + std::string(isa_name(active_isa())) + " row-interleaved")
          return;
        auto expected = quantized_matmuls_fast(x, {mlx}, group_size, bits)[0];
        auto actual = quantized_matmuls_fast(x, {rows}, group_size, bits)[0];
        EXPECT_TRUE(mx::array_equal(actual, expected).item<bool>())
            << level_name(level) << " bits " << bits << " group " << group_size;
        ++checked;
      });
    }
  }
#if defined(__x86_64__)
  EXPECT_GT(checked, 0) << "every x86-64 machine here runs the AVX2 level";
#endif
}

// One token of each of B sequences ([B, 1, K], a batched decode step): every
// row's result is the one it gets alone, whatever rows it runs with.
TEST(RowInterleavedWeights, DecodeRowsGetTheirBitsAtAnyBatch) {
  int seed = 6000;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 128}) {
      ++seed;
      auto mlx = mlx_layout(64, 384, group_size, mx::float16, seed, bits);
      auto rows = to_row_interleaved(mlx, group_size, bits);
      auto x = random_normal({16, 1, 384}, mx::float32, 1.0f, seed + 1);
      for_each_isa([&](IsaLevel level) {
        std::vector<mx::array> alone;
        for (int b = 0; b < 16; ++b) {
          auto row = mx::slice(x, {b, 0, 0}, {b + 1, 1, 384});
          alone.push_back(
              quantized_matmuls_fast(row, {rows}, group_size, bits, ActivationPrecision::int16)[0]);
        }
        for (int batch : {2, 5, 16}) {
          auto together = quantized_matmuls_fast(mx::slice(x, {0, 0, 0}, {batch, 1, 384}), {rows},
                                                 group_size, bits, ActivationPrecision::int16)[0];
          for (int b = 0; b < batch; ++b) {
            EXPECT_TRUE(mx::array_equal(mx::slice(together, {b, 0, 0}, {b + 1, 1, 64}), alone[b])
                            .item<bool>())
                << level_name(level) << " bits " << bits << " group " << group_size << " batch "
                << batch << " row " << b;
          }
        }
      });
    }
  }
}

TEST(RowInterleavedWeights, FallbackDequantizesAsMlx) {
  for (int bits : {4, 6, 8}) {
    auto mlx = mlx_layout(48, 256, 64, mx::bfloat16, 7, bits);
    auto rows = to_row_interleaved(mlx, 64, bits);
    auto x = random_normal({2, 256}, mx::float32, 1.0f, 8);
    auto cotangent = random_normal({2, 48}, mx::float32, 1.0f, 9);
    // The vjp of the fast op runs its stock-op fallback (MLX's own
    // quantized_matmul has no vjp with respect to all its inputs).
    auto through = [&](const QuantizedWeights& weights) -> mx::array {
      return mx::vjp(
                 [&](const std::vector<mx::array>& in) {
                   return std::vector<mx::array>{
                       quantized_matmuls_fast(in[0], {weights}, 64, bits)[0]};
                 },
                 {x}, {cotangent})
          .second[0];
    };
    // x @ w^T takes cotangent @ w back to x.
    auto w = mx::dequantize(mlx.w, mlx.scales, mlx.biases, 64, bits);
    auto stats = measure_error(through(rows), mx::matmul(cotangent, mx::astype(w, mx::float32)));
    EXPECT_LE(stats.max_rel, 1e-5) << "bits " << bits << ", max abs " << stats.max_abs;
  }
}

TEST(RowInterleavedWeights, GatheredRowsAreMlxLayoutRows) {
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 128}) {
      auto mlx = mlx_layout(64, 256, group_size, mx::bfloat16, 11 + bits, bits);
      auto rows = to_row_interleaved(mlx, group_size, bits);
      auto ids = mx::array({63, 0, 17, 17, 40, 15}, {2, 3});
      auto expected = gather_rows(mlx, ids, group_size, bits);
      auto actual = gather_rows(rows, ids, group_size, bits);
      SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group_size));
      ASSERT_EQ(actual.w.shape(), (mx::Shape{2, 3, 256 * bits / 32}));
      EXPECT_EQ(actual.w.dtype(), mx::uint32);
      EXPECT_TRUE(mx::array_equal(actual.w, expected.w).item<bool>());
      EXPECT_TRUE(mx::array_equal(actual.scales, expected.scales).item<bool>());
      EXPECT_TRUE(mx::array_equal(actual.biases, expected.biases).item<bool>());
      // And MLX's lookup of the same rows.
      EXPECT_TRUE(mx::array_equal(expected.w, mx::take(mlx.w, ids, 0)).item<bool>());
    }
  }
}

TEST(RowInterleavedWeights, RejectsWhatTheLayoutCannotHold) {
  auto three_bit = mx::quantize(random_normal({32, 128}, mx::float32, 0.05f, 1), 64, 3);
  EXPECT_THROW(to_row_interleaved({three_bit[0], three_bit[1], three_bit[2]}, 64, 3),
               std::invalid_argument);
  auto ragged = mlx_layout(40, 128, 64, mx::float32, 2);  // 40 rows: not a multiple of 16
  EXPECT_THROW(to_row_interleaved(ragged, 64, 4), std::invalid_argument);
  auto rows = to_row_interleaved(mlx_layout(32, 128, 64, mx::float32, 3), 64, 4);
  auto x = random_normal({1, 128}, mx::float32, 1.0f, 4);
  EXPECT_THROW(quantized_matmuls_fast(x, {rows, mlx_layout(32, 128, 64, mx::float32, 5)}, 64, 4),
               std::invalid_argument);  // layouts mixed in one call
}

}  // namespace
}  // namespace mlx_cpp::kernels
