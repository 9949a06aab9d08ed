// attention_fast against fast::scaled_dot_product_attention (the stock op
// mlx-lm calls) on random inputs: decode (one query row, keys split into
// chunks or not) and prefill (many rows, with and without a cache before
// them), GQA ratios, head sizes, causal masking, bool and additive masks,
// strided cache views, fully masked rows, under every SIMD level here. The
// reference is the stock op on float32 copies of the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

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

mx::array reference(const mx::array& q, const mx::array& k, const mx::array& v, float scale,
                    bool causal, const std::optional<mx::array>& mask = std::nullopt) {
  auto f32 = [](const mx::array& a) { return mx::astype(a, mx::float32); };
  std::optional<mx::array> m = mask;
  if (mask && mask->dtype() != mx::bool_) m = f32(*mask);
  std::string mode = causal ? "causal" : "";
  if (mask) mode = "array";
  return mx::fast::scaled_dot_product_attention(f32(q), f32(k), f32(v), scale, mode, m);
}

// As kv_cache.cpp's causal_mask: L rows after `offset` cached positions,
// each seeing the last `window` positions up to its own.
mx::array sliding_window_mask(int length, int offset, int window) {
  auto rows = mx::expand_dims(mx::arange(offset, offset + length), 1);
  auto keys = mx::expand_dims(mx::arange(offset + length), 0);
  return mx::logical_and(mx::greater_equal(rows, keys),
                         mx::less(rows, mx::add(keys, mx::array(window))));
}

struct Case {
  int B, Hq, Hkv, L, S, D;
};

std::string describe(const Case& c, bool causal, mx::Dtype dtype) {
  std::ostringstream out;
  out << "B" << c.B << " Hq" << c.Hq << " Hkv" << c.Hkv << " L" << c.L << " S" << c.S << " D" << c.D
      << (causal ? " causal " : " ") << dtype;
  return out.str();
}

TEST(AttentionFast, MatchesStockAttention) {
  ErrorReport report("attention_fast vs scaled_dot_product_attention");
  // Decode (L = 1) with and without key chunks, then prefill: S = L (a
  // fresh prompt) and S > L (a prompt after a cache), GQA groups 1 to 6,
  // D 64 to 256, row blocks that do and do not divide L.
  const Case cases[] = {
      {1, 9, 3, 1, 1, 64},      {1, 9, 3, 1, 37, 64},      {1, 12, 2, 1, 300, 128},
      {1, 8, 1, 1, 1000, 80},   {1, 3, 3, 2, 2, 64},       {1, 9, 3, 2, 50, 64},
      {1, 9, 3, 7, 7, 64},      {2, 12, 3, 7, 40, 128},    {1, 9, 3, 64, 64, 64},
      {1, 4, 4, 64, 300, 256},  {1, 12, 2, 200, 200, 128}, {1, 8, 2, 200, 513, 64},
      {1, 3, 1, 200, 1000, 64}, {2, 6, 2, 33, 33, 32}};
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (const auto& c : cases) {
      for (bool causal : {false, true}) {
        for (auto dtype : {mx::float32, mx::bfloat16}) {
          auto q = random_normal({c.B, c.Hq, c.L, c.D}, dtype, 1.0f, ++seed);
          auto k = random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed);
          auto v = random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed);
          float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
          auto fast = attention_fast(q, k, v, scale, causal);
          ASSERT_EQ(fast.dtype(), dtype);
          auto stats = measure_error(fast, reference(q, k, v, scale, causal));
          report.add(stats);
          EXPECT_LE(stats.max_rel, rounding_tolerance(dtype, 1, 1e-5))
              << describe(c, causal, dtype);
        }
      }
    }
  });
}

TEST(AttentionFast, Float16AndMixedInputTypes) {
  auto q = random_normal({1, 8, 20, 64}, mx::float16, 1.0f, 1);
  auto k = random_normal({1, 2, 50, 64}, mx::float16, 1.0f, 2);
  auto v = random_normal({1, 2, 50, 64}, mx::float16, 1.0f, 3);
  auto fast = attention_fast(q, k, v, 0.125f, true);
  EXPECT_EQ(fast.dtype(), mx::float16);
  EXPECT_LE(measure_error(fast, reference(q, k, v, 0.125f, true)).max_rel, 1.0 / 1024);
  // float32 queries over a bfloat16 cache: the output promotes to float32.
  auto q32 = mx::astype(q, mx::float32);
  auto k16 = mx::astype(k, mx::bfloat16), v16 = mx::astype(v, mx::bfloat16);
  auto mixed = attention_fast(q32, k16, v16, 0.125f, true);
  EXPECT_EQ(mixed.dtype(), mx::float32);
  EXPECT_LE(measure_error(mixed, reference(q32, k16, v16, 0.125f, true)).max_rel, 1e-5);
}

TEST(AttentionFast, ReadsStridedCacheViewsInPlace) {
  // A cache buffer of 256 steps of which 100 are filled, as mlx-lm's
  // KVCache returns keys[..., :offset, :]; decode and a 30-row prefill.
  auto k_buffer = random_normal({1, 3, 256, 64}, mx::float32, 1.0f, 1);
  auto v_buffer = random_normal({1, 3, 256, 64}, mx::bfloat16, 1.0f, 2);
  auto k = mx::slice(k_buffer, {0, 0, 0, 0}, {1, 3, 100, 64});
  auto v = mx::slice(v_buffer, {0, 0, 0, 0}, {1, 3, 100, 64});
  for (int rows : {1, 30}) {
    auto q = random_normal({1, 9, rows, 64}, mx::float32, 1.0f, 3);
    auto fast = attention_fast(q, k, v, 0.125f, true);
    EXPECT_LE(measure_error(fast, reference(q, k, v, 0.125f, true)).max_rel, 1e-5) << rows;
  }
  // Keys stored [B, S, H, D] and transposed: strides along H and S swap.
  auto k_t = mx::transpose(random_normal({1, 50, 3, 64}, mx::float32, 1.0f, 4), {0, 2, 1, 3});
  auto v_t = mx::transpose(random_normal({1, 50, 3, 64}, mx::float32, 1.0f, 5), {0, 2, 1, 3});
  for (int rows : {1, 20}) {
    auto q = random_normal({1, 9, rows, 64}, mx::float32, 1.0f, 6);
    auto fast = attention_fast(q, k_t, v_t, 0.125f, false);
    EXPECT_LE(measure_error(fast, reference(q, k_t, v_t, 0.125f, false)).max_rel, 1e-5) << rows;
  }
  // Queries that are themselves a transposed view ([B, L, H, D] storage).
  auto q_t = mx::transpose(random_normal({1, 40, 9, 64}, mx::float32, 1.0f, 7), {0, 2, 1, 3});
  auto fast = attention_fast(q_t, k_t, v_t, 0.125f, true);
  EXPECT_LE(measure_error(fast, reference(q_t, k_t, v_t, 0.125f, true)).max_rel, 1e-5);
}

TEST(AttentionFast, BoolAndAdditiveMasks) {
  ErrorReport report("attention_fast with masks");
  for_each_isa([&](IsaLevel) {
    for (int rows : {1, 7, 64}) {
      const int keys = 300, offset = keys - rows;
      auto q = random_normal({2, 6, rows, 64}, mx::bfloat16, 1.0f, 6);
      auto k = random_normal({2, 2, keys, 64}, mx::bfloat16, 1.0f, 7);
      auto v = random_normal({2, 2, keys, 64}, mx::bfloat16, 1.0f, 8);
      // A gemma-style sliding window over a cache, one mask for all heads;
      // the same as additive 0 / -1e9 and 0 / -inf; a causal bool mask;
      // per-head additive noise; a random bool mask per batch entry.
      auto window = sliding_window_mask(rows, offset, 100);
      auto masks = std::vector<mx::array>{
          window,
          mx::where(window, mx::array(0.0f), mx::array(-1e9f)),
          mx::where(window, mx::array(0.0f), mx::array(-INFINITY, mx::bfloat16)),
          sliding_window_mask(rows, offset, keys),
          random_normal({2, 6, rows, keys}, mx::float32, 1.0f, 9),
          mx::greater(mx::random::uniform({2, 1, rows, keys}, mx::float32, mx::random::key(10)),
                      mx::array(0.3f))};
      for (const auto& mask : masks) {
        auto fast = attention_fast(q, k, v, 0.125f, false, mask);
        auto stats = measure_error(fast, reference(q, k, v, 0.125f, false, mask));
        report.add(stats);
        EXPECT_LE(stats.max_rel, 1.0 / 128)
            << rows << " rows, mask " << mask.shape() << " " << mask.dtype();
      }
    }
  });
}

TEST(AttentionFast, FullyMaskedRowsAsTheStockOp) {
  auto q = random_normal({1, 4, 8, 64}, mx::float32, 1.0f, 1);
  auto k = random_normal({1, 2, 400, 64}, mx::float32, 1.0f, 2);
  auto v = random_normal({1, 2, 400, 64}, mx::float32, 1.0f, 3);
  // Row 2 sees nothing, row 5 only the last key; the others a window.
  auto row_ids = mx::expand_dims(mx::arange(8), 1);
  auto key_ids = mx::expand_dims(mx::arange(400), 0);
  auto visible = mx::logical_and(mx::greater_equal(key_ids, mx::multiply(row_ids, mx::array(40))),
                                 mx::not_equal(row_ids, mx::array(2)));
  visible =
      mx::where(mx::equal(row_ids, mx::array(5)), mx::equal(key_ids, mx::array(399)), visible);
  for (int rows : {1, 8}) {  // the fully masked row alone, and among others
    auto q_rows = mx::slice(q, {0, 0, 2, 0}, {1, 4, 2 + rows, 64});
    auto mask = mx::slice(visible, {2, 0}, {2 + rows, 400});
    // bool: every score is finfo.min, so the row averages v.
    auto fast = attention_fast(q_rows, k, v, 0.125f, false, mask);
    EXPECT_LE(measure_error(fast, reference(q_rows, k, v, 0.125f, false, mask)).max_rel, 1e-5)
        << rows;
    // additive -inf everywhere: NaN in both; the other rows agree.
    auto additive = mx::where(mask, mx::array(0.0f), mx::array(-INFINITY));
    auto fast_additive = attention_fast(q_rows, k, v, 0.125f, false, additive);
    auto expected = reference(q_rows, k, v, 0.125f, false, additive);
    EXPECT_TRUE(mx::array_equal(mx::isnan(fast_additive), mx::isnan(expected)).item<bool>());
    if (rows > 1) {
      auto rest = [](const mx::array& a) { return mx::slice(a, {0, 0, 1, 0}, {1, 4, 8, 64}); };
      EXPECT_LE(measure_error(rest(fast_additive), rest(expected)).max_rel, 1e-5);
    }
  }
}

void expect_rejected(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "expected rejection: " << message;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[attention_fast] ", 0), 0u) << what;
    EXPECT_NE(what.find(message), std::string::npos) << what;
  }
}

TEST(AttentionFast, RejectsInvalidInputs) {
  auto q = random_normal({1, 4, 8, 64}, mx::float32, 1.0f, 1);
  auto k = random_normal({1, 2, 6, 64}, mx::float32, 1.0f, 2);
  auto k3 = random_normal({1, 3, 10, 64}, mx::float32, 1.0f, 3);
  auto k_long = random_normal({1, 2, 10, 64}, mx::float32, 1.0f, 4);
  expect_rejected([&] { attention_fast(q, k, k, 0.125f, true); },
                  "causal attention needs at least as many keys as query rows, got 6 keys for 8");
  expect_rejected([&] { attention_fast(q, k3, k3, 0.125f); },
                  "4 query heads are not a multiple of 3 KV heads");
  expect_rejected(
      [&] {
        attention_fast(q, mx::slice(k_long, {0, 0, 0, 0}, {1, 2, 10, 32}), k_long, 0.125f);
      },
      "shapes q");
  expect_rejected([&] { attention_fast(q, k_long, k_long, 0.125f, true, mx::array(true)); },
                  "causal attention takes no mask array");
  expect_rejected(
      [&] {
        attention_fast(q, k_long, k_long, 0.125f, false, mx::ones({8, 9}, mx::bool_));
      },
      "does not broadcast to [B, Hq, L, S]");
  expect_rejected(
      [&] {
        attention_fast(q, k_long, k_long, 0.125f, false, mx::ones({8, 10}, mx::int32));
      },
      "mask must be bool or float");
  expect_rejected(
      [&] {
        attention_fast(mx::reshape(q, {4, 8, 64}), k_long, k_long, 0.125f);
      },
      "q, k, v must be 4-D");
}

}  // namespace
}  // namespace mlx_cpp::kernels
