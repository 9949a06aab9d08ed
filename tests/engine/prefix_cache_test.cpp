// The shared prefix cache on real caches (no model): longest-prefix
// matches through its token trie, whole-entry matches for caches that
// cannot trim, recency among equals, replacement, eviction and signatures.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include "engine/token_trie.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;

// cache_list_signature of one standard cache.
const std::string kKv = "kv;";

// Files caches under their own signature, as the scheduler does for a
// float scheme.
void file_entry(PrefixCache& cache, std::vector<int> tokens, CacheList caches) {
  const auto signature = cache_list_signature(caches);
  cache.insert(std::move(tokens), std::move(caches), signature);
}

// Caches holding `tokens.size()` tokens whose keys are the token ids, so a
// hit's contents show which entry it came from.
CacheList caches_for(const std::vector<int>& tokens, bool rotating = false, float tag = 0.0f) {
  CacheList caches;
  if (rotating)
    caches.push_back(std::make_unique<RotatingKvCache>(4));
  else
    caches.push_back(std::make_unique<StandardKvCache>());
  const int count = static_cast<int>(tokens.size());
  auto keys = mx::reshape(mx::add(mx::array(tokens.data(), {count}, mx::int32), mx::array(0)),
                          {1, 1, count, 1});
  keys = mx::add(mx::astype(keys, mx::float32), mx::array(tag));
  caches[0]->update_and_fetch(keys, keys);
  evaluate_cache_state(caches);
  return caches;
}

// The first key the hit's cache holds past the given position.
float key_at(const PrefixCache::Hit& hit, int position) {
  auto keys = hit.caches[0]->state()[0];
  return mx::slice(keys, {0, 0, position, 0}, {1, 1, position + 1, 1}).item<float>();
}

TEST(TokenTrie, WalksSharedPrefixesAndPrunesOnErase) {
  TokenTrie trie;
  trie.insert(1, {5, 6, 7});
  trie.insert(2, {5, 6, 9, 9});
  auto levels = trie.walk({5, 6, 9, 1}, 10);
  ASSERT_EQ(levels.size(), 3u);  // 5, 6, 9
  EXPECT_EQ(levels[1].passing.size(), 2u);
  EXPECT_EQ(levels[2].passing, std::vector<TokenTrie::Id>{2});
  EXPECT_EQ(trie.walk({5, 6, 9, 1}, 2).size(), 2u);  // the limit
  ASSERT_NE(trie.exact({5, 6, 7}), nullptr);
  EXPECT_EQ(*trie.exact({5, 6, 7}), std::vector<TokenTrie::Id>{1});
  EXPECT_TRUE(trie.exact({5, 6})->empty());
  trie.erase(2, {5, 6, 9, 9});
  EXPECT_EQ(trie.walk({5, 6, 9, 1}, 10).size(), 2u);
  trie.erase(1, {5, 6, 7});
  EXPECT_TRUE(trie.empty());
}

TEST(PrefixCache, TheLongestCommonPrefixWinsAndTheEntryIsNeverChanged) {
  PrefixCache cache(1 << 20);
  file_entry(cache, {1, 2, 3, 4}, caches_for({1, 2, 3, 4}));
  file_entry(cache, {1, 2, 9, 9, 9}, caches_for({1, 2, 9, 9, 9}));
  auto hit = cache.lookup({1, 2, 3, 7, 8}, kKv);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tokens, 3);
  EXPECT_EQ(hit->caches[0]->offset(), 3);
  EXPECT_EQ(key_at(*hit, 2), 3.0f);
  // Writing into the hit leaves the stored entry whole.
  auto token = mx::full({1, 1, 1, 1}, 100.0f);
  hit->caches[0]->update_and_fetch(token, token);
  auto again = cache.lookup({1, 2, 3, 4, 5}, kKv);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->tokens, 4);
  EXPECT_EQ(key_at(*again, 3), 4.0f);
  // The last prompt token is always left to compute; no common prefix, no hit.
  EXPECT_EQ(cache.lookup({1, 2, 3, 4}, kKv)->tokens, 3);
  EXPECT_FALSE(cache.lookup({7, 1, 2}, kKv));
  EXPECT_FALSE(cache.lookup({1}, kKv));
}

TEST(PrefixCache, CachesThatCannotTrimServeOnlyWholeEntries) {
  PrefixCache cache(1 << 20);
  // Six tokens through a 4-token window: past the window, not trimmable.
  file_entry(cache, {1, 2, 3, 4, 5, 6}, caches_for({1, 2, 3, 4, 5, 6}, true));
  const std::string signature = "rotating(max=4,keep=0);";
  EXPECT_FALSE(cache.lookup({1, 2, 3, 4, 5, 9, 9}, signature));
  auto hit = cache.lookup({1, 2, 3, 4, 5, 6, 7}, signature);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tokens, 6);
  // Another kind of cache never gets it.
  EXPECT_FALSE(cache.lookup({1, 2, 3, 4, 5, 6, 7}, kKv));
}

TEST(PrefixCache, AmongEqualMatchesTheMostRecentlyUsedWins) {
  PrefixCache cache(1 << 20);
  file_entry(cache, {1, 2, 3, 4}, caches_for({1, 2, 3, 4}, false, 0.5f));
  file_entry(cache, {1, 2, 3, 5}, caches_for({1, 2, 3, 5}, false, 0.25f));
  auto hit = cache.lookup({1, 2, 3, 6, 6}, kKv);
  ASSERT_TRUE(hit);
  EXPECT_EQ(key_at(*hit, 0), 1.25f);                // the newer entry
  ASSERT_TRUE(cache.lookup({1, 2, 3, 4, 4}, kKv));  // uses the older one: now the newest
  EXPECT_EQ(key_at(*cache.lookup({1, 2, 3, 6, 6}, kKv), 0), 1.5f);
}

TEST(PrefixCache, SameTokensReplaceAndEvictionForgetsTheEntry) {
  const std::size_t one_entry = cache_list_bytes(caches_for({1, 2, 3}));
  PrefixCache cache(2 * one_entry);
  file_entry(cache, {1, 2, 3}, caches_for({1, 2, 3}, false, 0.5f));
  file_entry(cache, {1, 2, 3}, caches_for({1, 2, 3}, false, 0.25f));
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.bytes(), one_entry);
  EXPECT_EQ(key_at(*cache.lookup({1, 2, 3, 4}, kKv), 0), 1.25f);
  file_entry(cache, {4, 5, 6}, caches_for({4, 5, 6}));
  file_entry(cache, {7, 8, 9}, caches_for({7, 8, 9}));  // evicts {1, 2, 3}, the least recent
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_FALSE(cache.lookup({1, 2, 3, 4}, kKv));
  EXPECT_TRUE(cache.lookup({4, 5, 6, 1}, kKv));
  cache.clear();
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_FALSE(cache.lookup({7, 8, 9, 1}, kKv));
}

}  // namespace
}  // namespace mlx_cpp
