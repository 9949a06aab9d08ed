// gather_quantized_matvec_fast against MLX's own gather_qmm: bit for bit
// (it replays MLX's bfloat16 arithmetic), at every ISA level, for the
// shapes a decode step's experts take (one token's k experts for the gate
// and up projections, each expert's own row for the down projection).
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/random.h>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;

struct Stack {
  mx::array w, scales, biases;
};

Stack quantized_experts(int experts, int rows, int columns, int group_size, int bits, int seed) {
  auto key = mx::random::key(seed);
  auto dense = mx::astype(
      mx::random::normal({experts, rows, columns}, mx::float32, 0.0f, 1.0f, key), mx::bfloat16);
  auto parts = mx::quantize(dense, group_size, bits);
  mx::eval(parts);
  return {parts[0], parts[1], parts[2]};
}

mx::array input(const mx::Shape& shape, int seed) {
  return mx::astype(mx::random::normal(shape, mx::float32, 0.0f, 1.0f, mx::random::key(seed)),
                    mx::bfloat16);
}

void expect_bit_exact(const mx::array& actual, const mx::array& expected) {
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  auto a = mx::view(actual, mx::uint16), e = mx::view(expected, mx::uint16);
  EXPECT_TRUE(mx::array_equal(a, e).item<bool>())
      << "differing elements: " << mx::sum(mx::not_equal(a, e)).item<int>() << " of "
      << actual.size();
}

TEST(ExpertMatvec, EqualsGatherQmmBitForBitForTheChosenExperts) {
  struct Case {
    int experts, rows, columns, group_size, bits, k;
  };
  const std::vector<Case> cases = {{8, 64, 64, 64, 4, 2},     {8, 48, 128, 32, 8, 2},
                                   {16, 100, 256, 128, 4, 4}, {4, 17, 64, 64, 2, 3},
                                   {8, 64, 512, 64, 8, 8},    {32, 96, 128, 64, 4, 8}};
  int seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.experts << " experts [" << c.rows << " x " << c.columns << "] " << c.bits
                 << "-bit g" << c.group_size << " k " << c.k);
    auto stack = quantized_experts(c.experts, c.rows, c.columns, c.group_size, c.bits, seed++);
    // Two tokens: gate/up form (one row per token, broadcast over k) and
    // down form (one row per token and expert).
    auto indices = mx::astype(
        mx::random::randint(0, c.experts, {1, 2, c.k}, mx::int32, mx::random::key(seed++)),
        mx::uint32);
    const std::vector<mx::array> inputs = {input({1, 2, 1, 1, c.columns}, seed++),
                                           input({1, 2, c.k, 1, c.columns}, seed++)};
    for (const auto& x : inputs) {
      auto expected = mx::gather_qmm(x, stack.w, stack.scales, stack.biases, std::nullopt, indices,
                                     true, c.group_size, c.bits);
      mx::eval(expected);
      testing::for_each_isa([&](IsaLevel) {
        auto actual = gather_quantized_matvec_fast(x, stack.w, stack.scales, stack.biases, indices,
                                                   c.group_size, c.bits);
        mx::eval(actual);
        expect_bit_exact(actual, expected);
      });
    }
  }
}

// Values past bfloat16's range and NaN inputs round as MLX's do.
TEST(ExpertMatvec, OverflowAndNaNRoundAsMlx) {
  auto stack = quantized_experts(2, 32, 64, 64, 4, 7);
  auto indices = mx::array({1u, 0u}, {1, 2});
  auto huge = mx::multiply(input({1, 1, 1, 64}, 8), mx::array(3.0e37f, mx::bfloat16));
  auto with_nan = mx::where(mx::greater(input({1, 1, 1, 64}, 9), mx::array(1.5f)),
                            mx::array(NAN, mx::bfloat16), input({1, 1, 1, 64}, 10));
  for (const auto& x : {huge, with_nan}) {
    auto expected =
        mx::gather_qmm(x, stack.w, stack.scales, stack.biases, std::nullopt, indices, true, 64, 4);
    testing::for_each_isa([&](IsaLevel) {
      expect_bit_exact(
          gather_quantized_matvec_fast(x, stack.w, stack.scales, stack.biases, indices, 64, 4),
          expected);
    });
  }
}

// What it does not cover, mx::gather_qmm computes: float32 activations,
// 6-bit codes, several rows per index.
TEST(ExpertMatvec, OtherFormsFallBackToGatherQmm) {
  auto stack = quantized_experts(4, 32, 64, 64, 6, 11);
  auto indices = mx::array({3u, 1u}, {1, 2});
  auto x = input({1, 1, 1, 64}, 12);
  expect_bit_exact(
      gather_quantized_matvec_fast(x, stack.w, stack.scales, stack.biases, indices, 64, 6),
      mx::gather_qmm(x, stack.w, stack.scales, stack.biases, std::nullopt, indices, true, 64, 6));
  auto stack4 = quantized_experts(4, 32, 64, 64, 4, 13);
  auto rows = input({1, 1, 3, 64}, 14);
  expect_bit_exact(
      gather_quantized_matvec_fast(rows, stack4.w, stack4.scales, stack4.biases, indices, 64, 4),
      mx::gather_qmm(rows, stack4.w, stack4.scales, stack4.biases, std::nullopt, indices, true, 64,
                     4));
  auto x32 = mx::astype(x, mx::float32);
  auto s32 = mx::astype(stack4.scales, mx::float32), b32 = mx::astype(stack4.biases, mx::float32);
  auto fast = gather_quantized_matvec_fast(x32, stack4.w, s32, b32, indices, 64, 4);
  auto stock = mx::gather_qmm(x32, stack4.w, s32, b32, std::nullopt, indices, true, 64, 4);
  EXPECT_TRUE(mx::array_equal(fast, stock).item<bool>());
}

}  // namespace
}  // namespace mlx_cpp::kernels
