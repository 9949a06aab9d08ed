// Exact GGUF -> MLX affine carry: MLX's own dequantize of the carried tensor
// must give the values gguf.quants.dequantize gives, element for element.
#include <gtest/gtest.h>
#include <mlx/ops.h>

#include "io/gguf/affine_mapping.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"
#include "tests/io/gguf_test_support.h"

namespace mlx_cpp::gguf {
namespace {

// Values compare with == : the carry keeps every value, but where d == 0 the
// gguf formula d * (q - 8) may yield -0.0 where scale * q + bias yields +0.0.
::testing::AssertionResult values_equal(const std::vector<float>& expected, const float* actual,
                                        std::size_t count) {
  if (expected.size() != count) return ::testing::AssertionFailure() << "size " << count;
  for (std::size_t i = 0; i < count; ++i) {
    if (!(expected[i] == actual[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " != expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(GgufAffine, ExactTypesDequantizeInMlxToGgufValues) {
  auto dir = testing::synthetic_dir();
  auto manifest = testing::read_manifest(dir);
  ASSERT_FALSE(manifest.is_null()) << "missing goldens: run the oracle_gguf_synthetic fixture";
  std::set<std::string> carried;
  for (const auto& entry : manifest["files"]) {
    GgufFile file(dir / entry["gguf"].get<std::string>());
    for (const auto& expected : entry["tensors"]) {
      const auto& tensor = *file.find_tensor(expected["name"]);
      auto affine = exact_affine(file, tensor);
      if (!exact_affine_bits(tensor.type)) {
        EXPECT_FALSE(affine.has_value()) << tensor.name;
        continue;
      }
      ASSERT_TRUE(affine.has_value()) << entry["gguf"] << " " << tensor.name;
      auto values = mlx::core::dequantize(
          affine->weight, mlx::core::astype(affine->scales, mlx::core::float32),
          mlx::core::astype(affine->biases, mlx::core::float32), affine->group_size, affine->bits);
      values.eval();
      ASSERT_EQ(values.dtype(), mlx::core::float32);
      EXPECT_EQ(std::vector<int>(values.shape().begin(), values.shape().end()),
                expected["shape"].get<std::vector<int>>());
      auto golden = testing::read_floats(dir / expected["golden"].get<std::string>());
      EXPECT_TRUE(values_equal(golden, values.data<float>(), values.size()))
          << entry["gguf"] << " " << tensor.name;
      carried.insert(ggml_type_name(tensor.type));
      // The legacy types' d and m are float16 in the file and stay so; the
      // K-quants' products d * sc need float32.
      const std::string type = ggml_type_name(tensor.type);
      const bool k_quant = type == "Q4_K" || type == "Q5_K";
      EXPECT_EQ(affine->scales.dtype(), k_quant ? mlx::core::float32 : mlx::core::float16)
          << entry["gguf"] << " " << tensor.name;
      EXPECT_EQ(affine->biases.dtype(), affine->scales.dtype());
    }
  }
  EXPECT_EQ(carried,
            (std::set<std::string>{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K"}));
}

TEST(GgufAffine, Q4_1AndQ8_0MapToFourAndEightBitsGroup32) {
  EXPECT_EQ(exact_affine_bits(static_cast<std::uint32_t>(GgmlType::kQ4_1)), 4);
  EXPECT_EQ(exact_affine_bits(static_cast<std::uint32_t>(GgmlType::kQ8_0)), 8);
  EXPECT_FALSE(exact_affine_bits(static_cast<std::uint32_t>(GgmlType::kQ6_K)).has_value());
}

}  // namespace
}  // namespace mlx_cpp::gguf
