// TurboQuant's codec against the numpy reference codec
// (tools/oracle/turboquant_reference.py): the codebooks, every code word,
// every norm and every decoded value bit for bit, for each group size and
// bit width, zero vectors included; and the refusals.
#include "kernels/turbo_codec.h"

#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {

namespace mx = mlx::core;

const std::filesystem::path kGoldens = std::filesystem::path(MLX_CPP_GOLDENS) / "turboquant";

mx::array golden(const std::string& name) {
  auto a = mx::load((kGoldens / (name + ".npy")).string());
  mx::eval(a);
  return a;
}

// Number of elements whose bytes differ.
template <class T>
int differing(const mx::array& actual, const mx::array& expected) {
  EXPECT_EQ(actual.shape(), expected.shape());
  if (actual.shape() != expected.shape()) return -1;
  auto a = mx::contiguous(actual), e = mx::contiguous(expected);
  mx::eval(a, e);
  int count = 0;
  for (size_t i = 0; i < a.size(); ++i)
    count += std::memcmp(a.data<T>() + i, e.data<T>() + i, sizeof(T)) != 0;
  return count;
}

struct Format {
  int group, bits;
  std::string name() const { return "g" + std::to_string(group) + "_b" + std::to_string(bits); }
};

std::vector<Format> formats() {
  std::vector<Format> all;
  for (int group : {32, 64, 128, 256})
    for (int bits : {2, 3, 4, 8}) all.push_back({group, bits});
  return all;
}

TEST(TurboCodec, CodebooksAreTheReferences) {
  for (const auto& f : formats()) {
    auto expected = golden(f.name() + ".centroids");
    mx::array actual(turbo::centroids(f.bits, f.group), {1 << f.bits}, mx::float32);
    EXPECT_EQ(differing<float>(actual, expected), 0) << f.name();
  }
}

TEST(TurboCodec, EncodesAndDecodesAsTheReference) {
  for (const auto& f : formats()) {
    SCOPED_TRACE(f.name());
    auto x = golden(f.name() + ".x");
    auto [codes, norms] = turbo_quantize(x, f.bits, f.group);
    EXPECT_EQ(differing<std::uint32_t>(codes, golden(f.name() + ".words")), 0);
    EXPECT_EQ(differing<float>(norms, golden(f.name() + ".norms")), 0);
    // Decoded from the reference's own codes and norms, and from ours.
    auto decoded =
        turbo_dequantize(golden(f.name() + ".words"), golden(f.name() + ".norms"), f.bits, f.group);
    EXPECT_EQ(differing<float>(decoded, golden(f.name() + ".decoded")), 0);
    EXPECT_EQ(differing<float>(turbo_dequantize(codes, norms, f.bits, f.group),
                               golden(f.name() + ".decoded")),
              0);
  }
}

TEST(TurboCodec, TakesHalfPrecisionInputsAsFloat32) {
  auto x = mx::astype(golden("g64_b4.x"), mx::bfloat16);
  auto [codes, norms] = turbo_quantize(x, 4, 64);
  auto [expected_codes, expected_norms] = turbo_quantize(mx::astype(x, mx::float32), 4, 64);
  EXPECT_EQ(differing<std::uint32_t>(codes, expected_codes), 0);
  EXPECT_EQ(differing<float>(norms, expected_norms), 0);
}

TEST(TurboCodec, RefusesFormatsItHasNoCodebookFor) {
  auto x = mx::zeros({2, 96});
  EXPECT_THROW(turbo_quantize(x, 5, 32), std::invalid_argument);  // bits
  EXPECT_THROW(turbo_quantize(x, 4, 48), std::invalid_argument);  // not a power of two
  EXPECT_THROW(turbo_quantize(x, 4, 64), std::invalid_argument);  // 64 does not divide 96
  EXPECT_THROW(turbo_quantize(mx::zeros({2, 64}, mx::int32), 4, 64), std::invalid_argument);
  auto [codes, norms] = turbo_quantize(mx::zeros({2, 64}), 4, 32);
  EXPECT_THROW(turbo_dequantize(codes, norms, 4, 64), std::invalid_argument);  // wrong norms
  EXPECT_THROW(turbo_dequantize(norms, norms, 4, 32), std::invalid_argument);  // not codes
}

}  // namespace
}  // namespace mlx_cpp::kernels
