// The GPU decode attention (kernels/gpu/decode_attention.h) against
// softmax(q kᵀ · scale) v computed on the CPU in float32, for rows of
// different lengths and cache capacities, grouped and plain heads, head
// sizes and dtypes; a row's output is the same bits alone as in a batch; what
// the kernel does not take is refused. Needs a GPU: elsewhere the tests skip
// and say so (they run in the GPU suite, scripts/gpu/parity).
#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cmath>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/gpu/decode_attention.h"

namespace mlx_cpp::kernels {
namespace {
namespace mx = mlx::core;
using testing::random_normal;

struct Rows {
  mx::array queries;
  std::vector<mx::array> keys, values;
  std::vector<int> lengths;
};

// Caches of capacity `length` rounded up to 256 (as the standard cache
// grows), random past the length too (the kernel must not read it).
Rows make_rows(const std::vector<int>& lengths, int heads, int kv_heads, int head_dim,
               mx::Dtype dtype, int seed) {
  const int rows = static_cast<int>(lengths.size());
  Rows made{random_normal({rows, heads, 1, head_dim}, dtype, 1.0f, seed), {}, {}, lengths};
  for (int b = 0; b < rows; ++b) {
    const int capacity = (lengths[b] + 255) / 256 * 256;
    made.keys.push_back(
        random_normal({1, kv_heads, capacity, head_dim}, dtype, 1.0f, seed + 2 * b + 1));
    made.values.push_back(
        random_normal({1, kv_heads, capacity, head_dim}, dtype, 1.0f, seed + 2 * b + 2));
  }
  return made;
}

// One row in float32 on the CPU: [1, heads, 1, head_dim].
mx::array reference_row(const Rows& rows, int b, float scale) {
  const auto cpu = mx::Device::cpu;
  const int heads = rows.queries.shape(1), head_dim = rows.queries.shape(3);
  const int kv_heads = rows.keys[b].shape(1), length = rows.lengths[b];
  auto q = mx::astype(mx::slice(rows.queries, {b, 0, 0, 0}, {b + 1, heads, 1, head_dim}, cpu),
                      mx::float32, cpu);
  auto take = [&](const mx::array& cache) {
    auto used = mx::slice(cache, {0, 0, 0, 0}, {1, kv_heads, length, head_dim}, cpu);
    // Query head h reads key/value head h / (heads / kv_heads).
    return mx::astype(mx::repeat(used, heads / kv_heads, 1, cpu), mx::float32, cpu);
  };
  auto k = take(rows.keys[b]), v = take(rows.values[b]);
  auto scores =
      mx::matmul(mx::multiply(q, mx::array(scale), cpu), mx::swapaxes(k, -1, -2, cpu), cpu);
  return mx::matmul(mx::softmax(scores, -1, /*precise=*/true, cpu), v, cpu);
}

std::string compare(const mx::array& ours, const Rows& rows, float scale) {
  const auto cpu = mx::Device::cpu;
  const int heads = rows.queries.shape(1), head_dim = rows.queries.shape(3);
  const double unit = ours.dtype() == mx::float32    ? 1e-5
                      : ours.dtype() == mx::bfloat16 ? std::ldexp(1.0, -7)
                                                     : std::ldexp(1.0, -9);
  for (int b = 0; b < static_cast<int>(rows.lengths.size()); ++b) {
    auto expected = reference_row(rows, b, scale);
    auto got = mx::astype(mx::slice(ours, {b, 0, 0, 0}, {b + 1, heads, 1, head_dim}, cpu),
                          mx::float32, cpu);
    const float error = mx::max(mx::abs(mx::subtract(got, expected, cpu), cpu), cpu).item<float>();
    const float largest = mx::max(mx::abs(expected, cpu), cpu).item<float>();
    if (!(error <= unit * std::max(largest, 1.0f))) {
      std::ostringstream message;
      message << "row " << b << " (length " << rows.lengths[b] << "): off by " << error
              << " with outputs up to " << largest;
      return message.str();
    }
  }
  return "";
}

bool covers(const Rows& rows, const mx::Stream& stream) {
  return gpu::decode_attention_covers(rows.queries, rows.keys, rows.values, rows.lengths, stream);
}

struct Case {
  std::vector<int> lengths;
  int heads, kv_heads, head_dim;
  mx::Dtype dtype;
};

TEST(GpuDecodeAttention, MatchesTheSoftmaxOfEveryRow) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  const std::vector<Case> cases = {
      {{1}, 4, 4, 64, mx::bfloat16},           {{5, 300, 1, 1000}, 12, 2, 128, mx::bfloat16},
      {{7, 256, 257}, 8, 1, 256, mx::float16}, {{33, 2}, 4, 2, 96, mx::float32},
      {{3000}, 32, 8, 128, mx::bfloat16},
  };
  int seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.lengths.size() << " rows, " << c.heads << "/"
                                      << c.kv_heads << " heads of " << c.head_dim);
    auto rows = make_rows(c.lengths, c.heads, c.kv_heads, c.head_dim, c.dtype, seed);
    seed += 100;
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    ASSERT_TRUE(covers(rows, gpu));
    auto ours =
        gpu::decode_attention(rows.queries, rows.keys, rows.values, rows.lengths, scale, gpu);
    mx::eval(ours);
    EXPECT_EQ(ours.shape(), rows.queries.shape());
    EXPECT_EQ(ours.dtype(), c.dtype);
    EXPECT_EQ(compare(ours, rows, scale), "");
  }
}

TEST(GpuDecodeAttention, EveryRowIsTheRowAlone) {
  MLX_CPP_REQUIRE_GPU();
  const auto gpu = mx::to_stream(mx::Device::gpu);
  auto rows = make_rows({40, 1, 700, 256, 9}, 8, 2, 128, mx::bfloat16, 500);
  const float scale = 0.088f;
  auto together =
      gpu::decode_attention(rows.queries, rows.keys, rows.values, rows.lengths, scale, gpu);
  for (int b = 0; b < 5; ++b) {
    auto query = mx::slice(rows.queries, {b, 0, 0, 0}, {b + 1, 8, 1, 128});
    auto alone = gpu::decode_attention(query, {rows.keys[b]}, {rows.values[b]}, {rows.lengths[b]},
                                       scale, gpu);
    auto same_row = mx::slice(together, {b, 0, 0, 0}, {b + 1, 8, 1, 128});
    EXPECT_TRUE(mx::array_equal(alone, same_row).item<bool>()) << "row " << b;
  }
}

// What the kernel does not take, decided without a GPU.
TEST(GpuDecodeAttention, CoversOnlyWhatItComputes) {
  const mx::Stream gpu(0, mx::Device::gpu), cpu = mx::to_stream(mx::Device::cpu);
  auto rows = make_rows({3, 10}, 4, 2, 64, mx::bfloat16, 600);
  EXPECT_TRUE(covers(rows, gpu));
  EXPECT_FALSE(covers(rows, cpu));
  auto longer = rows;
  longer.lengths[1] = 257;  // past the cache's capacity
  EXPECT_FALSE(covers(longer, gpu));
  auto odd_heads = make_rows({3}, 4, 3, 64, mx::bfloat16, 610);  // 3 does not divide 4
  EXPECT_FALSE(covers(odd_heads, gpu));
  auto narrow = make_rows({3}, 4, 2, 80, mx::bfloat16, 620);  // not a multiple of 32
  EXPECT_FALSE(covers(narrow, gpu));
  auto mixed = rows;
  mixed.keys[0] = mx::astype(mixed.keys[0], mx::float32);
  EXPECT_FALSE(covers(mixed, gpu));
  auto missing = rows;
  missing.values.pop_back();
  EXPECT_FALSE(covers(missing, gpu));
}

}  // namespace
}  // namespace mlx_cpp::kernels
