// quantized_matmul_fast against mlx::core::quantized_matmul on random
// inputs: every SIMD level here, 4, 6 and 8 bits, groups 32/64/128, decode and
// prefill row counts, all x / scale dtypes. The reference is the stock op
// evaluated in float32 (inputs upcast exactly), so the measured error is
// the fast kernel's own: summation order, plus the output rounding of
// bfloat16 / float16 results.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {
namespace {

namespace mx = mlx::core;
using testing::ErrorReport;
using testing::for_each_isa;
using testing::measure_error;
using testing::random_normal;
using testing::rounding_tolerance;

struct QuantizedWeights {
  mx::array w, scales, biases;
};

QuantizedWeights make_weights(int N, int K, int group_size, int bits, mx::Dtype scale_dtype,
                              int seed) {
  auto w = random_normal({N, K}, scale_dtype, 0.05f, seed);
  auto q = mx::quantize(w, group_size, bits);
  mx::eval(q);
  return {q[0], q[1], q[2]};
}

mx::array stock_in_float32(const mx::array& x, const QuantizedWeights& q, int group_size,
                           int bits) {
  return mx::quantized_matmul(mx::astype(x, mx::float32), q.w, mx::astype(q.scales, mx::float32),
                              mx::astype(q.biases, mx::float32), true, group_size, bits);
}

struct Case {
  int M, N, K;
};

const Case kCases[] = {{1, 37, 384}, {2, 64, 640}, {3, 8, 128},   {4, 100, 256},
                       {5, 33, 384}, {9, 70, 256}, {17, 65, 640}, {64, 96, 384}};

const std::pair<mx::Dtype, mx::Dtype> kDtypes[] = {{mx::float32, mx::float32},
                                                   {mx::bfloat16, mx::bfloat16},
                                                   {mx::float16, mx::float16},
                                                   {mx::float32, mx::bfloat16},
                                                   {mx::bfloat16, mx::float16}};

void check_case(const Case& c, int group_size, int bits, std::pair<mx::Dtype, mx::Dtype> dtypes,
                int seed, ErrorReport& f32_report, ErrorReport& half_report) {
  auto [x_dtype, scale_dtype] = dtypes;
  auto q = make_weights(c.N, c.K, group_size, bits, scale_dtype, seed);
  auto x = random_normal({c.M, c.K}, x_dtype, 1.0f, seed + 1);
  auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits);
  auto stock = mx::quantized_matmul(x, q.w, q.scales, q.biases, true, group_size, bits);
  ASSERT_EQ(fast.dtype(), stock.dtype());
  ASSERT_EQ(fast.shape(), stock.shape());
  // Bound: float32 summation order, or one rounding of a 16-bit output.
  auto reference = stock_in_float32(x, q, group_size, bits);
  auto stats = measure_error(fast, reference);
  (fast.dtype() == mx::float32 ? f32_report : half_report).add(stats);
  // For context in the log: the stock op's own error against the same
  // reference (its output rounding).
  static ErrorReport stock_half_report("stock quantized_matmul bfloat16/float16 output (context)");
  if (fast.dtype() != mx::float32) stock_half_report.add(measure_error(stock, reference));
  EXPECT_LE(stats.max_rel, rounding_tolerance(fast.dtype(), 1, 2e-6))
      << "M=" << c.M << " N=" << c.N << " K=" << c.K << " group=" << group_size << " bits=" << bits
      << " x=" << x_dtype << " scales=" << scale_dtype << " isa=" << level_name(active_level());
}

TEST(QuantizedMatmulFast, MatchesStockOnRandomShapes) {
  ErrorReport f32_report("quantized_matmul_fast float32 output");
  ErrorReport half_report("quantized_matmul_fast bfloat16/float16 output");
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (int bits : {4, 6, 8}) {
      for (int group_size : {32, 64, 128}) {
        for (const auto& c : kCases) {
          if (c.K % group_size != 0) continue;
          auto dtypes = kDtypes[seed % std::size(kDtypes)];
          check_case(c, group_size, bits, dtypes, ++seed, f32_report, half_report);
        }
      }
    }
  });
}

TEST(QuantizedMatmulFast, AllDtypeCombinationsOnDecodeAndPrefill) {
  ErrorReport f32_report("quantized_matmul_fast dtype sweep float32 output");
  ErrorReport half_report("quantized_matmul_fast dtype sweep bfloat16/float16 output");
  int seed = 100;
  for (auto x_dtype : {mx::float32, mx::bfloat16, mx::float16}) {
    for (auto scale_dtype : {mx::float32, mx::bfloat16, mx::float16}) {
      for (int M : {1, 24}) {
        check_case({M, 48, 576}, 32, 4, {x_dtype, scale_dtype}, ++seed, f32_report, half_report);
      }
    }
  }
}

TEST(QuantizedMatmulFast, BatchedAndNonContiguousX) {
  auto q = make_weights(40, 256, 64, 4, mx::float32, 7);
  auto x = random_normal({2, 3, 256}, mx::float32, 1.0f, 8);
  auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, 64, 4);
  EXPECT_EQ(fast.shape(), (mx::Shape{2, 3, 40}));
  EXPECT_LE(measure_error(fast, stock_in_float32(x, q, 64, 4)).max_rel, 2e-6);

  auto x_t = mx::transpose(random_normal({256, 6}, mx::float32, 1.0f, 9));  // [6, 256] strided
  auto fast_t = quantized_matmul_fast(x_t, q.w, q.scales, q.biases, 64, 4);
  EXPECT_LE(measure_error(fast_t, stock_in_float32(x_t, q, 64, 4)).max_rel, 2e-6);
}

TEST(QuantizedMatmulFast, ThreadCountsGiveTheSameResult) {
  auto q = make_weights(200, 512, 32, 8, mx::bfloat16, 11);
  auto x = random_normal({12, 512}, mx::float32, 1.0f, 12);
  set_kernel_threads(1);
  auto one = quantized_matmul_fast(x, q.w, q.scales, q.biases, 32, 8);
  mx::eval(one);
  set_kernel_threads(3);
  auto three = quantized_matmul_fast(x, q.w, q.scales, q.biases, 32, 8);
  mx::eval(three);
  set_kernel_threads(0);
  EXPECT_EQ(measure_error(one, three).max_abs, 0.0);  // columns never split along k
}

// Largest error int8 activations can add, per output: each x is off by at
// most half its block's step, max |x in block| / 254, times |w|.
mx::array int8_rounding_bound(const mx::array& x, const QuantizedWeights& q, int group_size,
                              int bits) {
  const int M = x.shape(0), K = x.shape(1), N = q.w.shape(0);
  auto block_max = mx::max(mx::abs(mx::reshape(mx::astype(x, mx::float32), {M, K / 32, 32})), -1);
  auto w = mx::dequantize(q.w, mx::astype(q.scales, mx::float32), mx::astype(q.biases, mx::float32),
                          group_size, bits);
  auto block_abs_w = mx::sum(mx::abs(mx::reshape(w, {N, K / 32, 32})), -1);
  return mx::matmul(mx::divide(block_max, mx::array(254.0f)), mx::transpose(block_abs_w));
}

TEST(QuantizedMatmulFast, Int8ActivationsStayWithinTheirRoundingBound) {
  ErrorReport int8_report("quantized_matmul_fast int8 activations vs float32");
  ErrorReport isa_report("quantized_matmul_fast int8 activations, SIMD vs portable");
  const mx::Dtype scale_dtypes[] = {mx::float32, mx::bfloat16, mx::float16};
  int seed = 300;
  for (int bits : {4, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (int K : {128, 384, 576, 640, 1536}) {
        if (K % group_size != 0) continue;
        for (int M : {1, 2, 3, 4}) {
          ++seed;
          auto q = make_weights(37 + M, K, group_size, bits, scale_dtypes[seed % 3], seed);
          auto x = random_normal({M, K}, mx::float32, 1.0f, seed + 1);
          auto reference = stock_in_float32(x, q, group_size, bits);
          auto bound = int8_rounding_bound(x, q, group_size, bits);
          set_isa_limit(IsaLevel::scalar);
          auto portable = quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits,
                                                ActivationPrecision::int8);
          mx::eval(portable);
          auto stats = measure_error(portable, reference);
          int8_report.add(stats);
          // The activations were really rounded (the float path would agree
          // with the reference to float rounding)...
          EXPECT_GT(stats.max_rel, 1e-5) << "M=" << M << " K=" << K;
          // ...and by no more than their bound, plus float32 summation.
          auto excess = mx::subtract(mx::abs(mx::subtract(portable, reference)), bound);
          EXPECT_LE(mx::max(excess).item<float>(), 2e-6 * stats.max_expected + 1e-6)
              << "M=" << M << " K=" << K << " group=" << group_size << " bits=" << bits;
          for (IsaLevel level : available_levels()) {
            set_isa_limit(level);
            auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits,
                                              ActivationPrecision::int8);
            mx::eval(fast);
            // The same integer dots in any SIMD level: only float sums differ
            // (a level without int8 dot products takes the float32 path,
            // which lies within the bound as well).
            auto isa_stats = measure_error(fast, portable);
            isa_report.add(isa_stats);
            if (extension_active(Extension::vnni)) {
              EXPECT_LE(isa_stats.max_rel, 1e-5) << "VNNI vs portable int8, M=" << M << " K=" << K;
            }
            auto isa_excess = mx::subtract(mx::abs(mx::subtract(fast, reference)), bound);
            EXPECT_LE(mx::max(isa_excess).item<float>(), 2e-6 * stats.max_expected + 1e-6)
                << "isa=" << level_name(level) << " M=" << M << " K=" << K;
          }
          set_isa_limit(detected_level());
        }
      }
    }
  }
}

// 6-bit weights have no integer dot-product kernel: asking for int8
// activations runs the float32 path, in every SIMD level.
TEST(QuantizedMatmulFast, SixBitWeightsKeepFloatActivationsWhenInt8IsAsked) {
  auto q = make_weights(45, 576, 64, 6, mx::float16, 17);
  auto x = random_normal({1, 576}, mx::float32, 1.0f, 18);
  auto reference = stock_in_float32(x, q, 64, 6);
  for_each_isa([&](IsaLevel level) {
    auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, 64, 6, ActivationPrecision::int8);
    EXPECT_LE(measure_error(fast, reference).max_rel, 2e-6) << "isa=" << level_name(level);
  });
}

// bfloat16 activations: the result is the float32 result on x rounded to
// bfloat16 (so the only error is that rounding), in every SIMD level, with
// and without the bfloat16 dot-product kernel; K values include one that is
// not a multiple of the kernel's 64-k chunk. Prefill-shaped calls keep
// float32 activations.
TEST(QuantizedMatmulFast, Bfloat16ActivationsAreTheFloatResultOnRoundedX) {
  ErrorReport rounded_report("quantized_matmul_fast bfloat16 activations vs float32 on rounded x");
  ErrorReport effect_report("quantized_matmul_fast bfloat16 activations vs float32 x (context)");
  const mx::Dtype scale_dtypes[] = {mx::float32, mx::bfloat16, mx::float16};
  int seed = 700;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (int K : {128, 96, 576, 640, 1536}) {
        if (K % group_size != 0) continue;
        for (int M : {1, 2, 3, 4, 6}) {
          ++seed;
          auto q = make_weights(37 + M, K, group_size, bits, scale_dtypes[seed % 3], seed);
          auto x = random_normal({M, K}, mx::float32, 1.0f, seed + 1);
          auto rounded_x = mx::astype(mx::astype(x, mx::bfloat16), mx::float32);
          auto reference = stock_in_float32(rounded_x, q, group_size, bits);
          auto unrounded = stock_in_float32(x, q, group_size, bits);
          for_each_isa([&](IsaLevel level) {
            auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits,
                                              ActivationPrecision::bfloat16);
            mx::eval(fast);
            if (M > 4) {
              // Prefill shapes keep float32 activations.
              EXPECT_LE(measure_error(fast, unrounded).max_rel, 1e-5) << "M=" << M << " K=" << K;
              return;
            }
            auto stats = measure_error(fast, reference);
            rounded_report.add(stats);
            // Float32 summation only: the 128 the kernel adds to each nibble
            // cancels against the sums of the same rounded x.
            EXPECT_LE(stats.max_rel, 1e-5)
                << "isa=" << level_name(level) << " M=" << M << " K=" << K
                << " group=" << group_size << " bits=" << bits;
            // x was really rounded (float32 x would agree to 1e-6).
            auto effect = measure_error(fast, unrounded);
            effect_report.add(effect);
            EXPECT_GT(effect.max_rel, 1e-5) << "M=" << M << " K=" << K;
          });
        }
      }
    }
  }
}

// The activations' rounding to int16 for the decode kernels gives the same
// codes and scales at every SIMD level as the portable loop: a row's
// tokens must not depend on the CPU's vector width. Groups of 32, 64 and
// 128 and odd lengths (a vector tail), with zeros, signed zeros, ties at
// .5, infinities and NaNs among normal values.
TEST(QuantizedMatmulFast, Int16ActivationsAreTheSameAtEveryLevel) {
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int count : {32, 64, 128, 7, 40}) {
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<float> x(count);
      for (auto& v : x) v = normal(generator);
      if (variant == 1) std::fill(x.begin(), x.end(), 0.0f);
      if (variant == 2) {
        x[0] = -0.0f;
        x[count - 1] = 8.0f;  // max |x| 8: x = 8 * (n + 0.5) / 32767 lands on ties
        for (int i = 1; i + 1 < count; ++i) x[i] = 8.0f * (i - count / 2 + 0.5f) / 32767.0f;
      }
      if (variant == 3)
        for (int i : {0, count / 2, count - 1}) x[i] = std::numeric_limits<float>::quiet_NaN();
      if (variant == 4) x[count - 1] = std::numeric_limits<float>::infinity();
      if (variant == 5) x[0] = -std::numeric_limits<float>::infinity();
      std::vector<std::int16_t> expected(count);
      const float expected_scale =
          scalar_vector_ops().quantize_int16(x.data(), count, expected.data());
      for_each_isa([&](IsaLevel isa) {
        std::vector<std::int16_t> actual(count, 1234);
        const float scale = vector_ops().quantize_int16(x.data(), count, actual.data());
        EXPECT_EQ(std::memcmp(&scale, &expected_scale, sizeof(float)), 0)
            << level_name(isa) << " count " << count << " variant " << variant;
        EXPECT_EQ(actual, expected)
            << level_name(isa) << " count " << count << " variant " << variant;
      });
    }
  }
  // The portable loop itself: ties to even, the clamp, NaN as -32767.
  std::vector<float> x = {16384.5f, 16385.5f, -16384.5f, 32767.0f,
                          std::numeric_limits<float>::quiet_NaN()};
  std::vector<std::int16_t> codes(x.size());
  EXPECT_EQ(scalar_vector_ops().quantize_int16(x.data(), 5, codes.data()), 1.0f);
  EXPECT_EQ(codes, (std::vector<std::int16_t>{16384, 16386, -16384, 32767, -32767}));
}

// x as the int16 kernels see it: per group, round(x * 32767 / max |x|)
// times max |x| / 32767, the same float operations as the kernel's.
mx::array int16_rounded(const mx::array& x, int group_size) {
  const int M = x.shape(0), K = x.shape(1);
  auto groups = mx::reshape(x, {M, K / group_size, group_size});
  auto amax = mx::max(mx::abs(groups), -1, true);
  auto inverse = mx::where(mx::greater(amax, mx::array(0.0f)),
                           mx::divide(mx::array(32767.0f), amax), mx::array(0.0f));
  auto q = mx::round(mx::multiply(groups, inverse));
  return mx::reshape(mx::multiply(q, mx::divide(amax, mx::array(32767.0f))), {M, K});
}

// int16 activations: with 4-, 6- and 8-bit weights in decode shapes, on
// the portable reference, AVX2 and AVX-512 VNNI (6 bits: and VBMI), the
// result is the float32 result on x rounded per group to int16, with the
// bias term on the exact x (the only error is that rounding); every other
// case (prefill shapes, SIMD levels without the kernel) is the float32
// result on the exact x. Each x has one large value per
// group, so the rounding is coarse enough to tell the two apart; K values
// include one that is not a multiple of the kernel's 64-k chunk.
TEST(QuantizedMatmulFast, Int16ActivationsAreTheFloatResultOnRoundedX) {
  ErrorReport rounded_report("quantized_matmul_fast int16 activations vs float32 on rounded x");
  ErrorReport effect_report("quantized_matmul_fast int16 activations vs float32 x (context)");
  const mx::Dtype scale_dtypes[] = {mx::float32, mx::bfloat16, mx::float16};
  int seed = 900;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (int K : {128, 96, 576, 640, 1536}) {
        if (K % group_size != 0) continue;
        for (int M : {1, 2, 3, 4, 6}) {
          ++seed;
          auto q = make_weights(37 + M, K, group_size, bits, scale_dtypes[seed % 3], seed);
          // One value of 300 per group (an outlier channel).
          auto outliers =
              mx::multiply(mx::equal(mx::remainder(mx::arange(K), mx::array(group_size)),
                                     mx::array(seed % group_size)),
                           mx::array(300.0f));
          auto x = mx::add(random_normal({M, K}, mx::float32, 1.0f, seed + 1), outliers);
          // The kernels take the bias term from the sums of the exact x:
          // sum_g bias_g * (sum over g of x - rounded x) is added back.
          auto x_rounded = int16_rounded(x, group_size);
          auto lost_sums =
              mx::sum(mx::reshape(mx::subtract(x, x_rounded), {M, K / group_size, group_size}), -1);
          auto rounded =
              mx::add(stock_in_float32(x_rounded, q, group_size, bits),
                      mx::matmul(lost_sums, mx::transpose(mx::astype(q.biases, mx::float32))));
          auto exact = stock_in_float32(x, q, group_size, bits);
          for_each_isa([&](IsaLevel level) {
            auto fast = quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits,
                                              ActivationPrecision::int16);
            mx::eval(fast);
            const Isa isa = active_isa();
            const bool simd_kernel =
                isa == Isa::avx2 || (extension_active(Extension::vnni) &&
                                     (bits != 6 || extension_active(Extension::vbmi)));
            const bool int16_kernel = M <= 4 && (isa == Isa::scalar || simd_kernel);
            std::ostringstream where;
            where << "isa=" << level_name(level) << " M=" << M << " K=" << K
                  << " group=" << group_size << " bits=" << bits;
            auto effect = measure_error(fast, exact);
            if (!int16_kernel) {
              EXPECT_LE(effect.max_rel, 1e-5) << where.str();
              return;
            }
            auto stats = measure_error(fast, rounded);
            rounded_report.add(stats);
            effect_report.add(effect);
            // Float32 summation only...
            EXPECT_LE(stats.max_rel, 1e-5) << where.str();
            // ...on an x that was really rounded.
            EXPECT_GT(effect.max_abs, 10 * stats.max_abs) << where.str();
          });
        }
      }
    }
  }
}

// Half-precision prefill: prefill shapes stay within the stated bound of
// the float32 result, at every level: float16 (AVX512-FP16; float16
// rounding of x and w, 32-term float16 partial sums) within 3e-3 of each
// row's largest |output|; bfloat16 (AVX512-BF16: exact codes, scales in
// float32) within the rounding of x, 2^-8 of sum |x| |w| per output, plus
// float32 summation; decode
// shapes and levels without either kernel give the float32 result. Rows of
// very different magnitude (1000x and 0.001x) check the per-row scaling:
// no overflow, no underflow.
TEST(QuantizedMatmulFast, HalfPrecisionPrefillStaysWithinItsBound) {
  ErrorReport float16_report("quantized_matmul_fast float16 prefill vs float32");
  ErrorReport bfloat16_report("quantized_matmul_fast bfloat16 prefill vs float32");
  const mx::Dtype scale_dtypes[] = {mx::float32, mx::bfloat16, mx::float16};
  int seed = 1100;
  for (int bits : {4, 6, 8}) {
    for (int group_size : {32, 64, 128}) {
      for (int K : {96, 384, 640, 1536}) {
        if (K % group_size != 0) continue;
        for (int M : {3, 5, 9, 17}) {
          ++seed;
          auto q = make_weights(37 + 2 * M, K, group_size, bits, scale_dtypes[seed % 3], seed);
          auto row_scale = mx::reshape(
              mx::where(
                  mx::equal(mx::remainder(mx::arange(M), mx::array(3)), mx::array(1)),
                  mx::array(1000.0f),
                  mx::where(mx::equal(mx::remainder(mx::arange(M), mx::array(3)), mx::array(2)),
                            mx::array(0.001f), mx::array(1.0f))),
              {M, 1});
          auto x = mx::multiply(random_normal({M, K}, mx::float32, 1.0f, seed + 1), row_scale);
          auto reference = stock_in_float32(x, q, group_size, bits);
          auto w = mx::dequantize(q.w, mx::astype(q.scales, mx::float32),
                                  mx::astype(q.biases, mx::float32), group_size, bits);
          auto magnitude = mx::matmul(mx::abs(x), mx::transpose(mx::abs(w)));
          for_each_isa([&](IsaLevel level) {
            auto fast =
                quantized_matmul_fast(x, q.w, q.scales, q.biases, group_size, bits,
                                      ActivationPrecision::float32, PrefillArithmetic::half);
            mx::eval(fast);
            const std::string variant = quantized_matmul_variant(
                bits, M <= 4, ActivationPrecision::float32, PrefillArithmetic::half);
            std::ostringstream where;
            where << "isa=" << level_name(level) << " M=" << M << " K=" << K
                  << " group=" << group_size << " bits=" << bits << " (" << variant << ")";
            if (variant.rfind("bfloat16 ", 0) == 0) {
              auto stats = measure_error(fast, reference);
              bfloat16_report.add(stats);
              auto bound = mx::multiply(magnitude, mx::array(std::ldexp(1.0f, -8)));
              auto excess = mx::subtract(mx::abs(mx::subtract(fast, reference)), bound);
              EXPECT_LE(mx::max(excess).item<float>(), 1e-5 * stats.max_expected) << where.str();
              return;
            }
            // Each row against its own largest |output|, so the small rows
            // are judged on their own scale.
            for (int m = 0; m < M; ++m) {
              auto row = mx::slice(fast, {m, 0}, {m + 1, fast.shape(1)});
              auto expected = mx::slice(reference, {m, 0}, {m + 1, fast.shape(1)});
              auto stats = measure_error(row, expected);
              if (variant.rfind("float16 ", 0) == 0) {
                float16_report.add(stats);
                EXPECT_LE(stats.max_rel, 3e-3) << where.str() << " row " << m;
                EXPECT_GT(stats.max_rel, 1e-5) << where.str() << " row " << m << ": not float16";
              } else {
                EXPECT_EQ(variant.rfind("float32 ", 0), 0u) << where.str();
                EXPECT_LE(stats.max_rel, 1e-5) << where.str() << " row " << m;
              }
            }
          });
        }
      }
    }
  }
  // Rows of subnormal values: finite results (they flush to zero in
  // float16 whatever the row's scaling).
  auto tiny = mx::multiply(random_normal({8, 256}, mx::float32, 1.0f, 1200), mx::array(1e-39f));
  auto q = make_weights(40, 256, 64, 4, mx::float32, 1201);
  auto out = quantized_matmul_fast(tiny, q.w, q.scales, q.biases, 64, 4,
                                   ActivationPrecision::float32, PrefillArithmetic::half);
  EXPECT_TRUE(mx::all(mx::isfinite(out)).item<bool>());
}

TEST(QuantizedMatmulFast, SeveralWeightsGiveEachProjectionExactly) {
  const int K = 576;
  std::vector<kernels::QuantizedWeights> weights;
  int seed = 500;
  for (int N : {576, 192, 200}) {
    auto q = make_weights(N, K, 32, 4, mx::bfloat16, ++seed);
    weights.push_back({q.w, q.scales, q.biases});
  }
  for (auto precision :
       {ActivationPrecision::float32, ActivationPrecision::int8, ActivationPrecision::bfloat16}) {
    for (int M : {1, 3, 9}) {
      auto x = random_normal({1, M, K}, mx::float32, 1.0f, M);
      auto together = quantized_matmuls_fast(x, weights, 32, 4, precision);
      ASSERT_EQ(together.size(), weights.size());
      for (std::size_t i = 0; i < weights.size(); ++i) {
        auto alone = quantized_matmul_fast(x, weights[i].w, weights[i].scales, weights[i].biases,
                                           32, 4, precision);
        EXPECT_EQ(together[i].shape(), alone.shape());
        // Columns are never split along k, so the grouping changes nothing.
        EXPECT_EQ(measure_error(together[i], alone).max_abs, 0.0) << "M=" << M << " i=" << i;
      }
    }
  }
  auto x = random_normal({1, 640}, mx::float32, 1.0f, 1);
  EXPECT_THROW(quantized_matmuls_fast(x, weights, 32, 4), std::invalid_argument);
  EXPECT_THROW(quantized_matmuls_fast(x, {}, 32, 4), std::invalid_argument);
}

// What `mlx-cpp bench` reports is the choice the calls make: at every SIMD
// level this machine runs, the named arithmetic matches what the int16
// test above finds each level doing (int16 decode on the portable
// reference and AVX2, there on row-interleaved weights; float32 prefill
// without AVX512-BF16).
TEST(QuantizedMatmulFast, VariantNamesTheKernelEachLevelTakes) {
  for_each_isa([&](IsaLevel level) {
    for (int bits : {4, 6, 8}) {
      const auto decode =
          quantized_matmul_variant(bits, true, ActivationPrecision::int16, PrefillArithmetic::half);
      const auto prefill = quantized_matmul_variant(bits, false, ActivationPrecision::int16,
                                                    PrefillArithmetic::half);
      const std::string isa = isa_name(active_isa());
      EXPECT_NE(decode.find(" gemv " + isa), std::string::npos) << decode;
      EXPECT_NE(prefill.find(" gemm " + isa), std::string::npos) << prefill;
      if (active_isa() == Isa::scalar) {
        EXPECT_EQ(decode, "int16 gemv " + isa);
        EXPECT_EQ(prefill, "float32 gemm " + isa);
      }
      // AVX2 reads row-interleaved weights in decode (int16) and prefill
      // (float32).
      if (active_isa() == Isa::avx2) {
        EXPECT_EQ(decode, "int16 gemv avx2 row-interleaved");
        EXPECT_EQ(prefill, "float32 gemm avx2 row-interleaved");
      }
      // The prefill arithmetic follows the level: float16 from avx512-fp16
      // on, bfloat16 at avx512-bf16, float32 below.
      const std::string arithmetic = level >= IsaLevel::avx512_fp16   ? "float16 "
                                     : level >= IsaLevel::avx512_bf16 ? "bfloat16 "
                                                                      : "float32 ";
      EXPECT_EQ(prefill.rfind(arithmetic, 0), 0u) << level_name(level) << ": " << prefill;
      // float32 activations always take the float kernels.
      EXPECT_EQ(quantized_matmul_variant(bits, true, ActivationPrecision::float32,
                                         PrefillArithmetic::float32)
                    .rfind("float32 gemv ", 0),
                0u);
    }
  });
}

TEST(QuantizedMatmulFast, RejectsBadInputsNamingTheOp) {
  auto q = make_weights(16, 128, 32, 4, mx::float32, 13);
  auto x = random_normal({1, 128}, mx::float32, 1.0f, 14);
  auto expect_rejected = [](auto&& call, const std::string& fragment) {
    try {
      call();
      ADD_FAILURE() << "expected rejection mentioning " << fragment;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[quantized_matmul_fast]"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_rejected([&] { quantized_matmul_fast(x, q.w, q.scales, q.biases, 32, 3); }, "bits is 3");
  expect_rejected([&] { quantized_matmul_fast(x, q.w, q.scales, q.biases, 16, 4); },
                  "group_size is 16");
  auto x_wrong = random_normal({1, 96}, mx::float32, 1.0f, 15);
  expect_rejected([&] { quantized_matmul_fast(x_wrong, q.w, q.scales, q.biases, 32, 4); },
                  "x has K = 96");
  expect_rejected([&] { quantized_matmul_fast(x, q.w, q.scales, q.biases, 64, 4); },
                  "expected (16,2)");
  auto biases_f16 = mx::astype(q.biases, mx::float16);
  expect_rejected([&] { quantized_matmul_fast(x, q.w, q.scales, biases_f16, 32, 4); },
                  "share one float dtype");
}

}  // namespace
}  // namespace mlx_cpp::kernels
