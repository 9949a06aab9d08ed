// The real models of the model cache (the default one is pulled by a CTest
// fixture; the others are checked when pulled): every tensor dequantizes bit
// for bit like gguf.quants.dequantize (sha256 of the float32 bytes), and
// every exactly carried tensor dequantizes in MLX to the same values.
#include <gtest/gtest.h>
#include <mlx/ops.h>

#include "io/gguf/affine_mapping.h"
#include "io/gguf/dequantize.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/sha256.h"
#include "tests/io/gguf_test_support.h"

namespace mlx_cpp::gguf {
namespace {

namespace fs = std::filesystem;

fs::path goldens() {
  return fs::path(MLX_CPP_GOLDENS);
}

#define REQUIRE_REAL_MODELS(manifest)                                                        \
  do {                                                                                       \
    std::ifstream marker(goldens() / "gguf_pulled" / "unavailable.txt");                     \
    if (marker) {                                                                            \
      std::string reason((std::istreambuf_iterator<char>(marker)), {});                      \
      GTEST_SKIP() << "default model could not be fetched: " << reason;                      \
    }                                                                                        \
    manifest = testing::read_manifest(goldens() / "gguf_real");                              \
    ASSERT_FALSE(manifest.is_null()) << "missing goldens: run the oracle_gguf_real fixture"; \
    bool has_default = false;                                                                \
    for (const auto& model : manifest["models"]) {                                           \
      has_default |= model["name"] == "smollm2-135m-instruct";                               \
    }                                                                                        \
    ASSERT_TRUE(has_default) << "the default model was not pulled by the fixture";           \
  } while (false)

std::string float_digest(const std::vector<float>& values) {
  return sha256_bytes(
      {reinterpret_cast<const std::uint8_t*>(values.data()), values.size() * sizeof(float)});
}

TEST(GgufRealModels, EveryTensorDequantizesLikeGgufPackage) {
  nlohmann::json manifest;
  REQUIRE_REAL_MODELS(manifest);
  for (const auto& model : manifest["models"]) {
    GgufFile file(model["gguf"].get<std::string>());
    ASSERT_EQ(file.tensors().size(), model["tensors"].size()) << model["name"];
    for (const auto& expected : model["tensors"]) {
      const auto* tensor = file.find_tensor(expected["name"]);
      ASSERT_NE(tensor, nullptr) << expected["name"];
      EXPECT_EQ(tensor->shape(), expected["shape"].get<std::vector<int>>());
      EXPECT_EQ(float_digest(dequantize_tensor(file, *tensor)), expected["sha256"])
          << model["name"] << " " << tensor->name << " (" << expected["type_name"] << ")";
    }
  }
}

TEST(GgufRealModels, ExactCarriesDequantizeInMlxToTheSameValues) {
  nlohmann::json manifest;
  REQUIRE_REAL_MODELS(manifest);
  for (const auto& model : manifest["models"]) {
    GgufFile file(model["gguf"].get<std::string>());
    std::size_t carried = 0;
    for (const auto& tensor : file.tensors()) {
      auto affine = exact_affine(file, tensor);
      if (!affine) continue;
      auto expected = dequantize_tensor(file, tensor);
      auto actual = mlx::core::dequantize(
          affine->weight, mlx::core::astype(affine->scales, mlx::core::float32),
          mlx::core::astype(affine->biases, mlx::core::float32), affine->group_size, affine->bits);
      actual.eval();
      const float* values = actual.data<float>();
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < expected.size(); ++i) mismatches += !(values[i] == expected[i]);
      EXPECT_EQ(mismatches, 0u) << model["name"] << " " << tensor.name;
      ++carried;
    }
    EXPECT_GT(carried, 0u) << model["name"];
  }
}

}  // namespace
}  // namespace mlx_cpp::gguf
