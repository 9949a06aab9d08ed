// The bytes a decode step reads, which benchmarks divide by bandwidth for
// the decode floor: the model's weights as held (the fast path's float16
// factors included) and the keys and values attended.
#include "engine/decode_traffic.h"

#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include "../model/golden_case.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

mx::array positions(int count) {  // [B, kv_heads, L, head_dim] float16: 2 x 8 x 2 bytes each
  return mx::zeros({1, 2, count, 8}, mx::float16);
}

TEST(DecodeTraffic, KeysAndValuesGrowWithTheContext) {
  CacheList caches;
  caches.push_back(std::make_unique<StandardKvCache>());
  caches.push_back(std::make_unique<StandardKvCache>());
  for (auto& cache : caches) cache->update_and_fetch(positions(10), positions(10));
  // Two caches, keys and values, 32 bytes per position each: 128 bytes per
  // position; contexts 4..6 average 5.
  EXPECT_DOUBLE_EQ(mean_kv_bytes_read(caches, 4, 6), 128.0 * 5);
  EXPECT_DOUBLE_EQ(mean_kv_bytes_read(caches, 7, 6), 0.0);
}

TEST(DecodeTraffic, ARotatingCacheReadsAtMostItsWindow) {
  CacheList caches;
  caches.push_back(std::make_unique<RotatingKvCache>(4));
  for (int i = 0; i < 9; ++i) caches.front()->update_and_fetch(positions(1), positions(1));
  // 64 bytes per position, contexts 3..5 attend 3, 4 and 4 positions.
  EXPECT_DOUBLE_EQ(mean_kv_bytes_read(caches, 3, 5), 64.0 * (3 + 4 + 4) / 3);
}

size_t tensor_bytes(const testing::GoldenCase& golden, bool (*keep)(const std::string&)) {
  size_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(golden.model_directory)) {
    if (entry.path().extension() != ".safetensors") continue;
    for (const auto& [name, array] : mx::load_safetensors(entry.path().string()).first)
      if (keep(name)) total += array.nbytes();
  }
  return total;
}

TEST(DecodeTraffic, WeightsAreEveryTensorButAnUntiedEmbedding) {
  // Tied: the embedding is the output head, read whole every step.
  auto tied = testing::GoldenCase::load("llama_q4");
  auto model = load_model(tied.model_directory, {KernelMode::stock});
  EXPECT_EQ(model.model->weight_bytes_per_token(),
            tensor_bytes(tied, [](const std::string&) { return true; }));
  // Untied: only one row of the embedding is read.
  auto untied = testing::GoldenCase::load("qwen3_q4");
  model = load_model(untied.model_directory, {KernelMode::stock});
  EXPECT_EQ(model.model->weight_bytes_per_token(),
            tensor_bytes(untied, [](const std::string& name) {
              return name.rfind("model.embed_tokens.", 0) != 0;
            }));
}

TEST(DecodeTraffic, TheFastPathCountsFloat32FactorsAsTheFloat16ItReads) {
  auto golden = testing::GoldenCase::load("qwen2_q4f32");  // tied, float32 scales and biases
  const size_t stock =
      load_model(golden.model_directory, {KernelMode::stock}).model->weight_bytes_per_token();
  const size_t fast =
      load_model(golden.model_directory, {KernelMode::fast}).model->weight_bytes_per_token();
  // The projections' scales and biases halve; the tied embedding keeps its own.
  const size_t factors = tensor_bytes(golden, [](const std::string& name) {
    const bool factor = name.ends_with(".scales") || name.ends_with(".biases");
    return factor && name.rfind("model.embed_tokens.", 0) != 0;
  });
  EXPECT_GT(factors, 0u);
  EXPECT_EQ(stock - fast, factors / 2);
}

}  // namespace
}  // namespace mlx_cpp
