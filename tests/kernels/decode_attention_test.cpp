// decode_attention_fast against fast::scaled_dot_product_attention (the
// stock op mlx-lm calls) on random caches: GQA ratios, head sizes, cache
// lengths that do and do not split into chunks, strided cache views, bool
// and additive masks, under every SIMD level here. The reference is the
// stock op on float32 copies of the inputs.
#include <gtest/gtest.h>

#include <stdexcept>

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
                    const std::optional<mx::array>& mask) {
  auto f32 = [](const mx::array& a) { return mx::astype(a, mx::float32); };
  std::optional<mx::array> m = mask;
  if (mask && mask->dtype() != mx::bool_) m = f32(*mask);
  return mx::fast::scaled_dot_product_attention(f32(q), f32(k), f32(v), scale, mask ? "array" : "",
                                                m);
}

struct Case {
  int B, Hq, Hkv, S, D;
};

TEST(DecodeAttentionFast, MatchesStockAttention) {
  ErrorReport report("decode_attention_fast vs scaled_dot_product_attention");
  const Case cases[] = {{1, 9, 3, 1, 64},   {1, 9, 3, 37, 64},   {1, 12, 2, 300, 128},
                        {2, 4, 4, 129, 64}, {1, 8, 1, 1000, 80}, {3, 2, 1, 513, 32}};
  for_each_isa([&](Isa) {
    int seed = 0;
    for (const auto& c : cases) {
      for (auto dtype : {mx::float32, mx::bfloat16, mx::float16}) {
        auto q = random_normal({c.B, c.Hq, 1, c.D}, dtype, 1.0f, ++seed);
        auto k = random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed);
        auto v = random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed);
        float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
        auto fast = decode_attention_fast(q, k, v, scale);
        auto stats = measure_error(fast, reference(q, k, v, scale, std::nullopt));
        report.add(stats);
        EXPECT_LE(stats.max_rel, rounding_tolerance(dtype, 1, 1e-5))
            << "B" << c.B << " Hq" << c.Hq << " Hkv" << c.Hkv << " S" << c.S << " D" << c.D << " "
            << dtype;
      }
    }
  });
}

TEST(DecodeAttentionFast, ReadsStridedCacheViewsInPlace) {
  // A cache buffer of 256 steps of which 100 are filled, as mlx-lm's
  // KVCache returns keys[..., :offset, :].
  auto k_buffer = random_normal({1, 3, 256, 64}, mx::float32, 1.0f, 1);
  auto v_buffer = random_normal({1, 3, 256, 64}, mx::float32, 1.0f, 2);
  auto k = mx::slice(k_buffer, {0, 0, 0, 0}, {1, 3, 100, 64});
  auto v = mx::slice(v_buffer, {0, 0, 0, 0}, {1, 3, 100, 64});
  auto q = random_normal({1, 9, 1, 64}, mx::float32, 1.0f, 3);
  auto fast = decode_attention_fast(q, k, v, 0.125f);
  EXPECT_LE(measure_error(fast, reference(q, k, v, 0.125f, std::nullopt)).max_rel, 1e-5);
  // Keys stored [B, S, H, D] and transposed: strides along H and S swap.
  auto k_t = mx::transpose(random_normal({1, 50, 3, 64}, mx::float32, 1.0f, 4), {0, 2, 1, 3});
  auto v_t = mx::transpose(random_normal({1, 50, 3, 64}, mx::float32, 1.0f, 5), {0, 2, 1, 3});
  auto fast_t = decode_attention_fast(q, k_t, v_t, 0.125f);
  EXPECT_LE(measure_error(fast_t, reference(q, k_t, v_t, 0.125f, std::nullopt)).max_rel, 1e-5);
}

TEST(DecodeAttentionFast, BoolAndAdditiveMasks) {
  ErrorReport report("decode_attention_fast with masks");
  auto q = random_normal({2, 6, 1, 64}, mx::float32, 1.0f, 6);
  auto k = random_normal({2, 2, 300, 64}, mx::float32, 1.0f, 7);
  auto v = random_normal({2, 2, 300, 64}, mx::float32, 1.0f, 8);
  // A sliding window: only the last 200 keys are visible; one mask for all heads.
  auto visible = mx::greater_equal(mx::arange(300), mx::array(100));
  auto bool_mask = mx::reshape(visible, {1, 1, 1, 300});
  auto additive = mx::where(bool_mask, mx::array(0.0f), mx::array(-1e9f));
  auto per_head = random_normal({2, 6, 1, 300}, mx::float32, 1.0f, 9);
  for (const auto& mask : {bool_mask, additive, per_head}) {
    auto fast = decode_attention_fast(q, k, v, 0.125f, mask);
    auto stats = measure_error(fast, reference(q, k, v, 0.125f, mask));
    report.add(stats);
    EXPECT_LE(stats.max_rel, 1e-5) << mask.dtype();
  }
}

TEST(DecodeAttentionFast, RejectsMoreThanOneQueryRow) {
  auto q = random_normal({1, 4, 2, 64}, mx::float32, 1.0f, 1);
  auto k = random_normal({1, 4, 10, 64}, mx::float32, 1.0f, 2);
  try {
    decode_attention_fast(q, k, k, 0.125f);
    FAIL() << "expected rejection";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[decode_attention_fast] q has 2 query rows"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mlx_cpp::kernels
