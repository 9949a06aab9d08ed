// rms_norm_fast, rope_fast, gated_activation_fast and log_softmax_fast against
// their fallbacks on random inputs of many shapes and dtypes, under every SIMD
// level available here. Each test logs the worst error it saw.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {

namespace mx = mlx::core;
using testing::ErrorReport;
using testing::for_each_isa;
using testing::measure_error;
using testing::random_normal;
using testing::rounding_tolerance;

const mx::Dtype kDtypes[] = {mx::float32, mx::bfloat16, mx::float16};

// Both sides round to the output dtype (the stock op once per op), so the
// 16-bit bounds allow two roundings.
TEST(RmsNormFast, MatchesStock) {
  ErrorReport report("rms_norm_fast vs fast::rms_norm");
  const mx::Shape shapes[] = {{1, 576}, {3, 1, 64}, {7, 1536}, {2, 9, 100}, {513, 576}, {5}};
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (const auto& shape : shapes) {
      for (auto dtype : kDtypes) {
        auto x = random_normal(shape, dtype, 3.0f, ++seed);
        auto weight = random_normal({shape.back()}, dtype, 1.0f, ++seed);
        for (bool with_weight : {true, false}) {
          std::optional<mx::array> w = with_weight ? std::optional(weight) : std::nullopt;
          auto fast = rms_norm_fast(x, w, 1e-5f);
          auto stock = mx::fast::rms_norm(x, w, 1e-5f);
          ASSERT_EQ(fast.dtype(), stock.dtype());
          auto stats = measure_error(fast, stock);
          report.add(stats);
          EXPECT_LE(stats.max_rel, rounding_tolerance(dtype, 2, 1e-5)) << shape << " " << dtype;
        }
      }
    }
  });
}

// The fused residual add gives exactly the two separate ops: MLX's add
// (rounded to the sum's dtype), then rms_norm_fast of that sum.
TEST(RmsNormFast, AddThenNormEqualsTheTwoOps) {
  const mx::Shape shapes[] = {{1, 1, 576}, {4, 1536}, {2, 9, 100}};
  for_each_isa([&](IsaLevel) {
    int seed = 40;
    for (const auto& shape : shapes) {
      for (auto dtype : kDtypes) {
        auto x = random_normal(shape, dtype, 3.0f, ++seed);
        auto residual = random_normal(shape, mx::float32, 1.0f, ++seed);
        auto weight = random_normal({shape.back()}, mx::float32, 1.0f, ++seed);
        auto [sum, normed] = add_rms_norm_fast(x, residual, weight, 1e-5f);
        auto expected_sum = mx::add(x, residual);
        auto expected = rms_norm_fast(expected_sum, weight, 1e-5f);
        ASSERT_EQ(sum.dtype(), expected_sum.dtype());
        ASSERT_EQ(normed.dtype(), expected.dtype());
        EXPECT_EQ(measure_error(sum, expected_sum).max_abs, 0.0) << shape << " " << dtype;
        EXPECT_EQ(measure_error(normed, expected).max_abs, 0.0) << shape << " " << dtype;
      }
    }
  });
  auto x = random_normal({2, 64}, mx::float32, 1.0f, 1);
  EXPECT_THROW(
      add_rms_norm_fast(x, random_normal({2, 32}, mx::float32, 1.0f, 2), std::nullopt, 1e-5f),
      std::invalid_argument);
}

TEST(RmsNormFast, RejectsAWeightOfTheWrongSize) {
  auto x = random_normal({2, 576}, mx::float32, 1.0f, 1);
  auto w = random_normal({512}, mx::float32, 1.0f, 2);
  try {
    rms_norm_fast(x, w, 1e-5f);
    FAIL() << "expected rejection";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[rms_norm_fast] weight has shape (512)"),
              std::string::npos)
        << e.what();
  }
}

struct RopeCase {
  mx::Shape shape;
  int dims;
  bool traditional;
  int offset;
};

// Rope's float32 bound is looser: libm's cos/sin and MLX's vectorized ones
// differ by a few ulp at large angles (position 1000+).
TEST(RopeFast, MatchesStockWithBaseOrFreqs) {
  ErrorReport report("rope_fast vs fast::rope");
  const RopeCase cases[] = {{{1, 9, 1, 64}, 64, false, 37},   {{1, 9, 1, 64}, 64, true, 5},
                            {{2, 3, 17, 128}, 128, false, 0}, {{2, 3, 17, 128}, 96, true, 1000},
                            {{1, 4, 33, 64}, 32, false, 7},   {{2, 20, 64}, 64, false, 3}};
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (const auto& c : cases) {
      for (auto dtype : kDtypes) {
        auto x = random_normal(c.shape, dtype, 1.0f, ++seed);
        auto fast = rope_fast(x, c.dims, c.traditional, 10000.0f, 1.0f, c.offset);
        auto stock = mx::fast::rope(x, c.dims, c.traditional, 10000.0f, 1.0f, c.offset);
        auto stats = measure_error(fast, stock);
        report.add(stats);
        EXPECT_LE(stats.max_rel, rounding_tolerance(dtype, 2, 5e-5))
            << c.shape << " dims " << c.dims << " " << dtype;

        auto freqs =
            mx::power(mx::array(500000.0f),
                      mx::divide(mx::arange(0, c.dims, 2, mx::float32), mx::array(float(c.dims))));
        auto fast_f = rope_fast(x, c.dims, c.traditional, std::nullopt, 0.5f, c.offset, freqs);
        auto stock_f =
            mx::fast::rope(x, c.dims, c.traditional, std::nullopt, 0.5f, c.offset, freqs);
        EXPECT_LE(measure_error(fast_f, stock_f).max_rel, rounding_tolerance(dtype, 2, 5e-5))
            << "freqs " << c.shape;
      }
    }
  });
}

TEST(RopeFast, PerBatchOffsets) {
  auto x = random_normal({3, 4, 5, 64}, mx::float32, 1.0f, 3);
  auto offsets = mx::array({0, 17, 400}, mx::int32);
  auto fast = rope_fast(x, 64, false, 10000.0f, 1.0f, offsets);
  auto stock = mx::fast::rope(x, 64, false, 10000.0f, 1.0f, offsets);
  EXPECT_LE(measure_error(fast, stock).max_rel, 1e-5);
}

TEST(GatedActivationFast, MatchesStockComposition) {
  ErrorReport silu_report("gated_activation_fast silu vs silu(gate) * up");
  ErrorReport gelu_report("gated_activation_fast gelu_approx vs gelu_approx(gate) * up");
  const mx::Shape shapes[] = {{1, 1536}, {1, 1, 8960}, {3, 7}, {512, 1536}, {2, 5, 1000}};
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (const auto& shape : shapes) {
      for (auto dtype : kDtypes) {
        auto gate = random_normal(shape, dtype, 4.0f, ++seed);
        auto up = random_normal(shape, dtype, 1.0f, ++seed);
        // Reference in float32: both fast and stock round once to dtype
        // from it (stock rounds each of its ops).
        auto gate32 = mx::astype(gate, mx::float32), up32 = mx::astype(up, mx::float32);
        auto silu_ref = mx::multiply(mx::multiply(gate32, mx::sigmoid(gate32)), up32);
        auto silu = measure_error(gated_activation_fast(gate, up, GatedActivation::silu), silu_ref);
        silu_report.add(silu);
        EXPECT_LE(silu.max_rel, rounding_tolerance(dtype, 2, 1e-5)) << shape << " " << dtype;
        auto inner = mx::multiply(
            mx::array(0.7978845608f),
            mx::add(gate32,
                    mx::multiply(mx::array(0.044715f), mx::power(gate32, mx::array(3.0f)))));
        auto gelu_ref = mx::multiply(mx::multiply(mx::multiply(mx::array(0.5f), gate32),
                                                  mx::add(mx::array(1.0f), mx::tanh(inner))),
                                     up32);
        auto gelu =
            measure_error(gated_activation_fast(gate, up, GatedActivation::gelu_approx), gelu_ref);
        gelu_report.add(gelu);
        EXPECT_LE(gelu.max_rel, rounding_tolerance(dtype, 2, 1e-5)) << shape << " " << dtype;
      }
    }
  });
}

TEST(GatedActivationFast, FallbackIsTheStockComposition) {
  // On a non-CPU stream the op returns its fallback; here we check the
  // fallback's formula through vjp, which differentiates it.
  auto gate = random_normal({4, 16}, mx::float32, 2.0f, 5);
  auto up = random_normal({4, 16}, mx::float32, 1.0f, 6);
  auto grad_fast = mx::vjp(
      [](const std::vector<mx::array>& in) {
        return std::vector<mx::array>{gated_activation_fast(in[0], in[1], GatedActivation::silu)};
      },
      {gate, up}, {mx::ones({4, 16})});
  auto sig = mx::sigmoid(gate);
  auto expected = mx::multiply(
      up, mx::add(sig, mx::multiply(gate, mx::multiply(sig, mx::subtract(mx::array(1.0f), sig)))));
  EXPECT_LE(measure_error(grad_fast.second[0], expected).max_rel, 1e-5);
}

// Both sides round once to the output dtype; in float32 the two differ in
// the exp's last bits and the summation order.
TEST(LogSoftmaxFast, MatchesStock) {
  ErrorReport report("log_softmax_fast vs x - logsumexp(x)");
  const mx::Shape shapes[] = {{1, 49152}, {3, 1000}, {2, 5, 33}, {1, 1}};
  for_each_isa([&](IsaLevel) {
    int seed = 300;
    for (const auto& shape : shapes) {
      for (auto dtype : kDtypes) {
        auto x = random_normal(shape, dtype, 8.0f, ++seed);
        auto fast = log_softmax_fast(x);
        auto stock = mx::subtract(x, mx::logsumexp(x, -1, true));
        ASSERT_EQ(fast.dtype(), stock.dtype());
        ASSERT_EQ(fast.shape(), stock.shape());
        auto stats = measure_error(fast, stock);
        report.add(stats);
        EXPECT_LE(stats.max_rel, rounding_tolerance(dtype, 2, 1e-5))
            << "shape " << shape << " dtype " << dtype;
      }
    }
  });
}

TEST(LogSoftmaxFast, InfiniteLogitsAsTheStockOps) {
  // A masked logit (-inf) stays -inf; a row of only -inf is NaN.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values{1.0f, -inf, 3.0f, 0.5f, -inf, -inf, -inf, -inf};
  auto x = mx::array(values.data(), {2, 4}, mx::float32);
  auto fast = mx::reshape(log_softmax_fast(x), {8});
  auto stock = mx::reshape(mx::subtract(x, mx::logsumexp(x, -1, true)), {8});
  mx::eval(fast, stock);
  for (int i = 0; i < 8; ++i) {
    const float f = fast.data<float>()[i];
    const float s = stock.data<float>()[i];
    if (std::isnan(s)) {
      EXPECT_TRUE(std::isnan(f)) << i;
    } else if (std::isinf(s)) {
      EXPECT_EQ(f, s) << i;
    } else {
      EXPECT_NEAR(f, s, 1e-6f) << i;
    }
  }
  EXPECT_THROW(log_softmax_fast(mx::array({1, 2, 3})), std::invalid_argument);  // integers
}

}  // namespace
}  // namespace mlx_cpp::kernels
