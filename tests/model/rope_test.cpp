// Every rope variant against mlx-lm's: the same frequency table and the same
// output bits on random inputs (float32 and bfloat16) at an offset.
#include "model/rope.h"

#include <gtest/gtest.h>
#include <mlx/io.h>

#include <fstream>

#include "golden_case.h"

namespace mlx_cpp {
namespace {

TEST(RopeParity, EveryVariantMatchesMlxLm) {
  const auto directory = std::filesystem::path(MLX_CPP_GOLDENS) / "rope_goldens";
  auto arrays = mlx::core::load_safetensors((directory / "rope.safetensors").string()).first;
  std::ifstream stream(directory / "cases.json");
  ASSERT_TRUE(stream) << "missing rope goldens";
  auto cases = nlohmann::json::parse(stream);
  ASSERT_GE(cases.size(), 9u);
  for (const auto& test_case : cases) {
    const auto name = test_case["name"].get<std::string>();
    SCOPED_TRACE(name);
    std::optional<int> max_positions;
    if (test_case.contains("max_position_embeddings"))
      max_positions = test_case["max_position_embeddings"].get<int>();
    auto rope =
        make_rotary_embedding(test_case["dims"], test_case["base"], test_case["traditional"],
                              test_case["scaling"], max_positions);
    if (arrays.count(name + ".freqs")) {
      ASSERT_TRUE(rope.freqs.has_value());
      EXPECT_EQ(testing::compare_exact(*rope.freqs, arrays.at(name + ".freqs")), "");
    } else {
      EXPECT_FALSE(rope.freqs.has_value());
    }
    for (const char* dtype : {"f32", "bf16"}) {
      const auto prefix = name + "." + dtype;
      auto output = rope.apply(arrays.at(prefix + ".x"), 3);
      EXPECT_EQ(testing::compare_exact(output, arrays.at(prefix + ".out")), "") << dtype;
    }
  }
}

TEST(RopeErrors, UnsupportedTypeIsNamed) {
  nlohmann::json scaling = {{"rope_type", "ntk_by_parts"}, {"factor", 2.0}};
  try {
    make_rotary_embedding(32, 10000, false, scaling, 4096);
    FAIL() << "an unknown rope type should be rejected";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("'ntk_by_parts'"), std::string::npos);
  }
}

}  // namespace
}  // namespace mlx_cpp
