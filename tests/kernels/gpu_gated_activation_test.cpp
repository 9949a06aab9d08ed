// The GPU gated activation (kernels/gpu/gated_activation.h) against
// act(gate) * up computed element by element on the CPU in double, for
// silu and the tanh approximation of gelu, several dtypes and shapes
// (widths that do not fill a block, many rows); gated_activation_fast takes
// it on the GPU. Needs a GPU: elsewhere the tests skip and say so (they run
// in the GPU suite, scripts/gpu/parity).
#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/gpu/gated_activation.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;
using testing::random_normal;

double activate(double g, GatedActivation activation) {
  if (activation == GatedActivation::silu) return g / (1.0 + std::exp(-g));
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
}

// The largest error of `ours` beyond one rounding of its dtype plus float32
// arithmetic, over every element.
double worst_excess(const mx::array& ours, const mx::array& gate, const mx::array& up,
                    GatedActivation activation) {
  const auto cpu = mx::Device::cpu;
  auto g = mx::astype(gate, mx::float32, cpu), u = mx::astype(up, mx::float32, cpu),
       got = mx::astype(ours, mx::float32, cpu);
  mx::eval(g, u, got);
  const double unit = ours.dtype() == mx::float32    ? std::ldexp(1.0, -23)
                      : ours.dtype() == mx::bfloat16 ? std::ldexp(1.0, -8)
                                                     : std::ldexp(1.0, -11);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double exact = activate(g.data<float>()[i], activation) * u.data<float>()[i];
    const double allowed = std::abs(exact) * unit + 1e-6 * (1.0 + std::abs(exact));
    worst = std::max(worst, std::abs(got.data<float>()[i] - exact) - allowed);
  }
  return worst;
}

TEST(GpuGatedActivation, MatchesTheExactResult) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  struct Case {
    mx::Shape shape;
    mx::Dtype gate, up;
  };
  const std::vector<Case> cases = {{{1, 1, 8960}, mx::bfloat16, mx::bfloat16},
                                   {{13, 1, 1536}, mx::bfloat16, mx::bfloat16},
                                   {{3, 100}, mx::float16, mx::float16},
                                   {{2, 7, 33}, mx::float32, mx::float32},
                                   {{5, 300}, mx::bfloat16, mx::float32}};
  int seed = 1;
  for (const auto& c : cases)
    for (auto activation : {GatedActivation::silu, GatedActivation::gelu_approx}) {
      SCOPED_TRACE(::testing::Message()
                   << c.shape << (activation == GatedActivation::silu ? " silu" : " gelu_approx"));
      auto gate = random_normal(c.shape, c.gate, 3.0f, seed++);
      auto up = random_normal(c.shape, c.up, 1.0f, seed++);
      ASSERT_TRUE(gpu::gated_activation_covers(gate, up, gpu));
      auto ours = gpu::gated_activation(gate, up, activation, gpu);
      mx::eval(ours);
      EXPECT_EQ(ours.shape(), c.shape);
      EXPECT_EQ(ours.dtype(), mx::promote_types(c.gate, c.up));
      EXPECT_LE(worst_excess(ours, gate, up, activation), 0.0);
      // The dispatch: gated_activation_fast takes the kernel on the GPU.
      auto dispatched = gated_activation_fast(gate, up, activation, gpu);
      EXPECT_TRUE(mx::array_equal(dispatched, ours).item<bool>());
    }
}

// What the kernel does not take, decided without a GPU.
TEST(GpuGatedActivation, CoversOnlyWhatItComputes) {
  auto gate = random_normal({2, 64}, mx::bfloat16, 1.0f, 1);
  auto up = random_normal({2, 64}, mx::bfloat16, 1.0f, 2);
  const mx::Stream gpu(0, mx::Device::gpu), cpu = mx::to_stream(mx::Device::cpu);
  EXPECT_TRUE(gpu::gated_activation_covers(gate, up, gpu));
  EXPECT_FALSE(gpu::gated_activation_covers(gate, up, cpu));
  EXPECT_FALSE(
      gpu::gated_activation_covers(gate, random_normal({2, 32}, mx::bfloat16, 1.0f, 3), gpu));
  EXPECT_FALSE(gpu::gated_activation_covers(mx::astype(gate, mx::int32), up, gpu));
}

}  // namespace
}  // namespace mlx_cpp::kernels
