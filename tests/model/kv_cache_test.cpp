// Cache bookkeeping: growth steps, trimming, byte sizes, signatures, the
// rotating window and the masks each cache asks attention to use.
#include "model/kv_cache.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

mx::array tokens(int count, float value = 1.0f) {
  return mx::full({1, 2, count, 8}, value, mx::float32);  // [B, kv_heads, L, head_dim]
}

TEST(StandardKvCache, GrowsInStepsAndReturnsOnlyFilledRows) {
  StandardKvCache cache;
  auto [keys, values] = cache.update_and_fetch(tokens(5), tokens(5));
  EXPECT_EQ(keys.shape(2), 5);
  EXPECT_EQ(cache.offset(), 5);
  EXPECT_EQ(cache.byte_size(), 2u * 1 * 2 * 256 * 8 * 4);  // one 256-row step for K and V
  for (int i = 0; i < 300; ++i) cache.update_and_fetch(tokens(1), tokens(1));
  EXPECT_EQ(cache.offset(), 305);
  EXPECT_EQ(cache.byte_size(), 2u * 1 * 2 * 512 * 8 * 4);
  EXPECT_EQ(cache.signature(), "kv");
}

TEST(StandardKvCache, TrimMovesTheOffsetAndNewTokensOverwrite) {
  StandardKvCache cache;
  cache.update_and_fetch(tokens(6, 1.0f), tokens(6, 1.0f));
  EXPECT_TRUE(cache.is_trimmable());
  EXPECT_EQ(cache.trim(2), 2);
  EXPECT_EQ(cache.offset(), 4);
  auto [keys, values] = cache.update_and_fetch(tokens(1, 7.0f), tokens(1, 7.0f));
  EXPECT_EQ(keys.shape(2), 5);
  EXPECT_EQ(mx::slice(keys, {0, 0, 4, 0}, {1, 2, 5, 8}).size(), 16u);
  EXPECT_EQ(mx::max(mx::slice(keys, {0, 0, 4, 0}, {1, 2, 5, 8})).item<float>(), 7.0f);
  EXPECT_EQ(cache.trim(100), 5);  // never below zero
}

TEST(StandardKvCache, MasksFollowTheQueryLength) {
  StandardKvCache cache;
  EXPECT_EQ(cache.make_mask(1, std::nullopt).kind, AttentionMask::Kind::none);
  EXPECT_EQ(cache.make_mask(4, std::nullopt).kind, AttentionMask::Kind::causal);
  auto windowed = cache.make_mask(4, 2);
  ASSERT_EQ(windowed.kind, AttentionMask::Kind::array);
  EXPECT_EQ(windowed.mask->shape(), (mx::Shape{4, 4}));
}

TEST(RotatingKvCache, KeepsAtMostTheWindowForSingleTokens) {
  RotatingKvCache cache(4);
  for (int i = 0; i < 10; ++i) {
    auto [keys, values] = cache.update_and_fetch(tokens(1, float(i)), tokens(1, float(i)));
    EXPECT_EQ(keys.shape(2), std::min(i + 1, 4));
  }
  EXPECT_EQ(cache.offset(), 10);
  EXPECT_FALSE(cache.is_trimmable());
  EXPECT_EQ(cache.signature(), "rotating(max=4,keep=0)");
}

TEST(RotatingKvCache, MultiTokenUpdatesKeepWindowContextForEachToken) {
  RotatingKvCache cache(4);
  cache.update_and_fetch(tokens(3), tokens(3));
  auto [keys, values] = cache.update_and_fetch(tokens(5), tokens(5));
  EXPECT_EQ(keys.shape(2), 3 + 5);  // max_size - 1 + new tokens at most
  EXPECT_EQ(cache.offset(), 8);
  auto mask = cache.make_mask(5, 4);
  ASSERT_EQ(mask.kind, AttentionMask::Kind::array);
}

// What admission reserves is the most the cache really held along the way:
// a prompt fed in chunks past the window, then single tokens.
TEST(RotatingKvCache, BytesForTokensCoverAChunkOnTopOfTheWindow) {
  for (int chunk : {1, 5, 8, 40}) {
    RotatingKvCache cache(16);
    const int prompt = 40, generated = 20;
    std::size_t most = 0;
    for (int fed = 0; fed < prompt; fed += chunk) {
      const int length = std::min(chunk, prompt - fed);
      auto [keys, values] = cache.update_and_fetch(tokens(length), tokens(length));
      mx::eval(keys, values);
      most = std::max(most, cache.byte_size());
    }
    for (int i = 0; i < generated; ++i) {
      auto [keys, values] = cache.update_and_fetch(tokens(1), tokens(1));
      mx::eval(keys, values);
      most = std::max(most, cache.byte_size());
    }
    const std::size_t per_token = 2u * 1 * 2 * 8 * 4;
    // The prompt's first chunk alone (chunk 40) or window - 1 + chunk.
    const std::size_t expected = per_token * std::min(prompt, 16 - 1 + std::max(chunk, 1));
    EXPECT_EQ(most, std::max(expected, per_token * 16)) << "chunk " << chunk;
    // Never less than was held; exact while a chunk is shorter than the
    // prompt (the cache cannot tell prompt tokens from generated ones).
    const std::size_t reserved = cache.bytes_for_tokens(prompt + generated, chunk);
    EXPECT_GE(reserved, most) << "chunk " << chunk;
    if (chunk < prompt) {
      EXPECT_EQ(reserved, most) << "chunk " << chunk;
    }
  }
}

TEST(RotatingKvCache, TrimsOnlyInsideTheWindow) {
  RotatingKvCache cache(8);
  cache.update_and_fetch(tokens(5), tokens(5));
  EXPECT_TRUE(cache.is_trimmable());
  EXPECT_EQ(cache.trim(2), 2);
  EXPECT_EQ(cache.offset(), 3);
  auto clone = cache.clone();
  EXPECT_EQ(clone->offset(), 3);
  EXPECT_EQ(clone->signature(), cache.signature());
}

TEST(CausalMask, MatchesTheDefinition) {
  auto mask = causal_mask(3, 2, std::nullopt);  // queries at positions 2..4
  EXPECT_EQ(mask.shape(), (mx::Shape{3, 5}));
  EXPECT_TRUE(mx::array_equal(mx::sum(mask, 1), mx::array({3, 4, 5})).item<bool>());
  auto windowed = causal_mask(3, 2, 2);
  EXPECT_TRUE(mx::array_equal(mx::sum(windowed, 1), mx::array({2, 2, 2})).item<bool>());
}

}  // namespace
}  // namespace mlx_cpp
