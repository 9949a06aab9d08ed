// packed_attention_fast against attention over the same keys and values
// dequantized to float32 (MLX's dequantize for the affine form, the codec's
// turbo_dequantize for TurboQuant, itself bit-exact with the reference
// codec) and the stock attention op: decode and prefill shapes, key chunks,
// grouped heads, causal and array masks, cache views of a larger storage,
// every bit width and group size, under every SIMD level here; and the
// refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/packed_row_decoders.h"
#include "kernels/turbo_codec.h"

namespace mlx_cpp::kernels {
namespace {

namespace mx = mlx::core;
using testing::ErrorReport;
using testing::for_each_isa;
using testing::measure_error;
using testing::random_normal;

PackedKvRows pack(const mx::array& x, const KvPackingFormat& format) {
  if (format.packing == KvPacking::turbo) {
    auto [codes, norms] = turbo_quantize(x, format.bits, format.group_size);
    return {codes, norms, std::nullopt};
  }
  auto parts = mx::quantize(x, format.group_size, format.bits);
  return {parts[0], parts[1], parts[2]};
}

mx::array unpack(const PackedKvRows& rows, const KvPackingFormat& format) {
  if (format.packing == KvPacking::turbo)
    return turbo_dequantize(rows.codes, rows.scales, format.bits, format.group_size);
  return mx::dequantize(rows.codes, mx::astype(rows.scales, mx::float32),
                        mx::astype(*rows.biases, mx::float32), format.group_size, format.bits);
}

mx::array reference(const mx::array& q, const PackedKvRows& k, const PackedKvRows& v,
                    const KvPackingFormat& format, float scale, bool causal,
                    const std::optional<mx::array>& mask = std::nullopt) {
  std::string mode = causal ? "causal" : (mask ? "array" : "");
  return mx::fast::scaled_dot_product_attention(mx::astype(q, mx::float32), unpack(k, format),
                                                unpack(v, format), scale, mode, mask);
}

std::string describe(const KvPackingFormat& f) {
  return std::string(f.packing == KvPacking::turbo ? "turbo" : "affine") + " " +
         std::to_string(f.bits) + " bits, group " + std::to_string(f.group_size);
}

std::vector<KvPackingFormat> formats() {
  std::vector<KvPackingFormat> all;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128}) all.push_back({KvPacking::affine, bits, group});
  for (int bits : {2, 3, 4, 8})
    for (int group : {32, 64, 128}) all.push_back({KvPacking::turbo, bits, group});
  return all;
}

struct Case {
  int B, Hq, Hkv, L, S, D;
  bool causal;
};

TEST(PackedAttention, AttendsAsOverTheDequantizedRows) {
  ErrorReport report("packed_attention_fast vs attention over dequantized rows");
  // Decode with and without key chunks, prefill of a fresh prompt and after
  // a cache, grouped heads, head sizes 64 and 128.
  const Case cases[] = {{1, 9, 3, 1, 37, 64, false},   {1, 8, 2, 1, 1000, 128, false},
                        {2, 6, 2, 1, 300, 64, false},  {1, 9, 3, 33, 33, 64, true},
                        {1, 8, 2, 20, 300, 128, true}, {2, 4, 4, 64, 200, 64, false}};
  for_each_isa([&](IsaLevel) {
    int seed = 0;
    for (const auto& format : formats())
      for (const auto& c : cases) {
        if (c.D % format.group_size) continue;
        for (auto dtype : {mx::float32, mx::bfloat16}) {
          auto q = random_normal({c.B, c.Hq, c.L, c.D}, dtype, 1.0f, ++seed);
          auto k = pack(random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed), format);
          auto v = pack(random_normal({c.B, c.Hkv, c.S, c.D}, dtype, 1.0f, ++seed), format);
          const float scale = 1.0f / std::sqrt(float(c.D));
          auto fast = packed_attention_fast(q, k, v, format, scale, c.causal);
          ASSERT_EQ(fast.dtype(), dtype);
          auto stats = measure_error(fast, reference(q, k, v, format, scale, c.causal));
          report.add(stats);
          // float32: summation order only; bfloat16: the output's rounding.
          EXPECT_LE(stats.max_rel, dtype == mx::float32 ? 2e-5 : 1.0 / 128)
              << describe(format) << " B" << c.B << " L" << c.L << " S" << c.S << " D" << c.D << " "
              << dtype;
        }
      }
  });
}

TEST(PackedAttention, ReadsCacheViewsAndMasks) {
  // A cache's storage of 256 steps holding 100 tokens, as a quantized cache
  // fetches it; a sliding-window bool mask and an additive one.
  for (const auto& format :
       {KvPackingFormat{KvPacking::affine, 4, 32}, KvPackingFormat{KvPacking::turbo, 3, 64}}) {
    auto k_all = pack(random_normal({1, 2, 256, 64}, mx::bfloat16, 1.0f, 1), format);
    auto v_all = pack(random_normal({1, 2, 256, 64}, mx::bfloat16, 1.0f, 2), format);
    auto view = [](const PackedKvRows& rows) {
      auto cut = [](const mx::array& a) {
        return mx::slice(a, {0, 0, 0, 0}, {1, 2, 100, a.shape(3)});
      };
      return PackedKvRows{cut(rows.codes), cut(rows.scales),
                          rows.biases ? std::optional(cut(*rows.biases)) : std::nullopt};
    };
    auto k = view(k_all), v = view(v_all);
    for (int rows : {1, 12}) {
      auto q = random_normal({1, 6, rows, 64}, mx::bfloat16, 1.0f, 3);
      auto fast = packed_attention_fast(q, k, v, format, 0.125f, true);
      EXPECT_LE(measure_error(fast, reference(q, k, v, format, 0.125f, true)).max_rel, 1.0 / 128)
          << describe(format) << " " << rows;
      auto positions = mx::expand_dims(mx::arange(100 - rows, 100), 1);
      auto keys = mx::expand_dims(mx::arange(100), 0);
      auto window = mx::logical_and(mx::greater_equal(positions, keys),
                                    mx::less(positions, mx::add(keys, mx::array(40))));
      for (const auto& mask : {window, mx::where(window, mx::array(0.0f), mx::array(-1e9f))}) {
        auto masked = packed_attention_fast(q, k, v, format, 0.125f, false, mask);
        EXPECT_LE(measure_error(masked, reference(q, k, v, format, 0.125f, false, mask)).max_rel,
                  1.0 / 128)
            << describe(format) << " " << rows << " mask " << mask.dtype();
      }
    }
  }
}

// The row decoders of every instruction set here: TurboQuant rows equal
// centroid times norm bit for bit (codes read bit by bit from the stream),
// affine rows MLX's float32 dequantization up to the multiply-add's
// rounding.
TEST(PackedRowDecoders, DecodeRowsAsTheCodecAndMlx) {
  for_each_isa([&](IsaLevel level) {
    const auto& decoders = packed_row_decoders();
    int seed = 0;
    for (const auto& format : formats()) {
      for (int width : {64, 128, 256}) {
        if (width % format.group_size) continue;
        SCOPED_TRACE(describe(format) + " width " + std::to_string(width) + " " +
                     level_name(level));
        auto x = random_normal({5, width}, mx::float32, 2.0f, ++seed);
        auto rows = pack(x, format);
        auto codes = mx::contiguous(rows.codes);
        auto scales = mx::contiguous(mx::astype(rows.scales, mx::float32));
        mx::eval(codes, scales);
        const int words = width * format.bits / 32, groups = width / format.group_size;
        std::vector<float> decoded(width), expected(width);
        if (format.packing == KvPacking::turbo) {
          for (int r = 0; r < 5; ++r) {
            const auto* row_codes = codes.data<std::uint32_t>() + r * words;
            const auto* norms = scales.data<float>() + r * groups;
            decoders.table(row_codes, format.bits, width, format.group_size,
                           turbo::centroids(format.bits, format.group_size), norms, decoded.data());
            // Value i: its code's centroid times its group's norm.
            const float* centroids = turbo::centroids(format.bits, format.group_size);
            for (int i = 0; i < width; ++i) {
              std::uint32_t code = 0;
              for (int bit = 0; bit < format.bits; ++bit) {
                const int at = i * format.bits + bit;
                code |= ((row_codes[at / 32] >> (at % 32)) & 1u) << bit;
              }
              expected[i] = centroids[code] * norms[i / format.group_size];
            }
            EXPECT_EQ(decoded, expected) << "row " << r;
          }
          continue;
        }
        auto biases = mx::contiguous(mx::astype(*rows.biases, mx::float32));
        auto reference = unpack(rows, format);
        mx::eval(biases, reference);
        for (int r = 0; r < 5; ++r) {
          decoders.affine(codes.data<std::uint32_t>() + r * words, format.bits, width,
                          format.group_size, scales.data<float>() + r * groups,
                          biases.data<float>() + r * groups, decoded.data());
          for (int i = 0; i < width; ++i) {
            const float want = reference.data<float>()[r * width + i];
            ASSERT_NEAR(decoded[i], want, 1e-6f * std::max(1.0f, std::abs(want)))
                << "row " << r << " value " << i;
          }
        }
      }
    }
  });
}

void expect_rejected(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "expected rejection: " << message;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(PackedAttention, RejectsInputsThatDoNotFit) {
  const KvPackingFormat affine{KvPacking::affine, 4, 64}, turbo{KvPacking::turbo, 4, 64};
  auto q = random_normal({1, 6, 1, 64}, mx::float32, 1.0f, 1);
  auto x = random_normal({1, 2, 10, 64}, mx::float32, 1.0f, 2);
  auto a = pack(x, affine), t = pack(x, turbo);
  expect_rejected(
      [&] {
        packed_attention_fast(q, a, a, {KvPacking::affine, 3, 64}, 1.0f);
      },
      "no affine packing of 3 bits");
  expect_rejected(
      [&] {
        packed_attention_fast(q, t, t, {KvPacking::turbo, 5, 64}, 1.0f);
      },
      "no TurboQuant packing of 5 bits");
  expect_rejected([&] { packed_attention_fast(q, t, t, affine, 1.0f); }, "needs biases");
  expect_rejected([&] { packed_attention_fast(q, a, a, turbo, 1.0f); }, "has no biases");
  auto bf16 = pack(mx::astype(x, mx::bfloat16), turbo);
  bf16.scales = mx::astype(bf16.scales, mx::bfloat16);
  expect_rejected([&] { packed_attention_fast(q, bf16, bf16, turbo, 1.0f); },
                  "norms must be float32");
  expect_rejected(
      [&] {
        packed_attention_fast(q, a, a, {KvPacking::affine, 8, 64}, 1.0f);
      },
      "codes must be uint32");
  auto q5 = random_normal({1, 5, 1, 64}, mx::float32, 1.0f, 3);
  expect_rejected([&] { packed_attention_fast(q5, a, a, affine, 1.0f); }, "not a multiple");
  expect_rejected(
      [&] {
        packed_attention_fast(q, a, a, affine, 1.0f, false, mx::ones({1, 9}, mx::bool_));
      },
      "does not broadcast to [B, Hq, L, S]");
  auto q_long = random_normal({1, 6, 11, 64}, mx::float32, 1.0f, 4);
  expect_rejected([&] { packed_attention_fast(q_long, a, a, affine, 1.0f, true); },
                  "at least as many keys");
}

}  // namespace
}  // namespace mlx_cpp::kernels
