// Widened quantized codes dequantize to the very weights the narrow ones
// do (MLX's own dequantize on both), for every narrow width MLX writes.
#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/random.h>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;

TEST(WidenQuantizedCodes, KeepsEveryWeight) {
  for (auto [from, to] : {std::pair{5, 6}, std::pair{3, 4}, std::pair{2, 4}, std::pair{5, 8}}) {
    for (int group : {32, 64}) {
      SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to) + " bits, group " +
                   std::to_string(group));
      auto w = mx::random::normal({24, 256}, mx::float32, 0, 1, mx::random::key(from * 7 + group));
      auto parts = mx::quantize(w, group, from);
      const auto& packed = parts[0];
      auto wide = widen_quantized_codes(packed, from, to);
      ASSERT_EQ(wide.shape(1), 256 * to / 32);
      auto narrow_weights = mx::dequantize(packed, parts[1], parts[2], group, from);
      auto wide_weights = mx::dequantize(wide, parts[1], parts[2], group, to);
      EXPECT_TRUE(mx::array_equal(narrow_weights, wide_weights).item<bool>());
    }
  }
  EXPECT_THROW(widen_quantized_codes(mx::zeros({2, 5}, mx::uint32), 6, 5), std::invalid_argument);
}

}  // namespace
}  // namespace mlx_cpp::kernels
