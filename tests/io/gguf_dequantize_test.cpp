// Dequantization parity: every tensor of the synthetic files (one per GGML
// type) must equal gguf.quants.dequantize bit for bit.
#include <gtest/gtest.h>

#include "io/error.h"
#include "io/gguf/dequantize.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"
#include "tests/io/gguf_test_support.h"

namespace mlx_cpp::gguf {
namespace {

TEST(GgufDequantize, EveryTypeMatchesGgufPackageBitForBit) {
  auto dir = testing::synthetic_dir();
  auto manifest = testing::read_manifest(dir);
  ASSERT_FALSE(manifest.is_null()) << "missing goldens: run the oracle_gguf_synthetic fixture";
  std::set<std::string> covered;
  for (const auto& entry : manifest["files"]) {
    GgufFile file(dir / entry["gguf"].get<std::string>());
    for (const auto& expected : entry["tensors"]) {
      const auto* tensor = file.find_tensor(expected["name"]);
      ASSERT_NE(tensor, nullptr);
      EXPECT_EQ(tensor->type, expected["type"].get<std::uint32_t>());
      EXPECT_EQ(tensor->shape(), expected["shape"].get<std::vector<int>>());
      auto golden = testing::read_floats(dir / expected["golden"].get<std::string>());
      auto values = dequantize_tensor(file, *tensor);
      EXPECT_TRUE(testing::bitwise_equal(golden, values.data(), values.size()))
          << entry["gguf"] << " " << tensor->name;
      covered.insert(ggml_type_name(tensor->type));
    }
  }
  for (const char* type : {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K",
                           "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K"}) {
    EXPECT_TRUE(covered.count(type)) << type << " has no golden";
  }
}

TEST(GgufDequantize, UnsupportedTypeIsNamed) {
  std::vector<std::uint8_t> bytes(66);
  std::vector<float> out(256);
  try {
    dequantize(16, bytes, out);
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("IQ2_XXS"), std::string::npos) << error.what();
  }
}

TEST(GgufDequantize, SizeMismatchIsAnError) {
  std::vector<std::uint8_t> bytes(20);
  std::vector<float> out(64);
  EXPECT_THROW(dequantize(3, bytes, out), Error);
}

}  // namespace
}  // namespace mlx_cpp::gguf
