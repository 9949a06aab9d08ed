// The SSD tier under the prefix cache: entries evicted from memory come
// back from disk after a restart and serve a request exactly as the same
// entry held in memory does (bit for bit, plain and sliding-window
// models); a file that is corrupted, truncated, half written or of another
// model is deleted and never loaded; the byte cap evicts the least
// recently used; a queue past its cap drops entries instead of growing.
#include "engine/ssd_cache.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <filesystem>
#include <fstream>

#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
namespace fs = std::filesystem;
using testing::ScriptedRequest;

struct TemporaryDirectory {
  fs::path path;
  TemporaryDirectory() {
    path = fs::temp_directory_path() /
           ("mlx-cpp-ssd-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TemporaryDirectory() { fs::remove_all(path); }
};

std::vector<fs::path> files_in(const fs::path& directory) {
  std::vector<fs::path> files;
  for (const auto& item : fs::recursive_directory_iterator(directory))
    if (item.is_regular_file()) files.push_back(item.path());
  return files;
}

std::vector<int> prompt_of(int length, int seed) {
  std::vector<int> ids;
  for (int i = 0; i < length; ++i) ids.push_back((seed * 131 + i * 17) % 200 + 3);
  return ids;
}

ScriptedRequest request_for(std::vector<int> prompt) {
  ScriptedRequest scripted;
  scripted.request.prompt_ids = std::move(prompt);
  scripted.request.options.max_tokens = 4;
  return scripted;
}

SchedulerOptions options_with(const fs::path& ssd) {
  SchedulerOptions options;
  options.max_batch = 1;
  options.prompt_cache_bytes = std::size_t(1) << 30;
  options.ssd_cache_directory = ssd;
  return options;
}

// A conversation's two turns: the second prompt extends the first.
struct Turns {
  std::vector<int> first, second;
};
Turns turns(int seed) {
  Turns turns{prompt_of(30, seed), prompt_of(30, seed)};
  for (int id : prompt_of(6, seed + 1)) turns.second.push_back(id);
  return turns;
}

// The first turn run on a scheduler with the SSD cache in `directory`, its
// entry then written.
void cache_first_turn(const ModelRuntime& runtime, const fs::path& directory,
                      const std::vector<int>& first) {
  Scheduler before(runtime, options_with(directory));
  testing::run_scripted(runtime, before.options(), {request_for(first)}, &before);
  before.flush_prompt_cache();
  EXPECT_GE(before.counts().ssd_cache.files, 1u);
}

class SsdCacheScheduler : public ::testing::TestWithParam<std::string> {};

// A conversation's first turn is cached, the server restarts, the second
// turn is served from the file: exactly what the entry held in memory gives.
TEST_P(SsdCacheScheduler, EntriesComeBackAfterARestartAsFromMemory) {
  auto runtime = testing::tiny_runtime(GetParam(), KernelMode::stock);
  TemporaryDirectory directory;
  const auto [first, second] = turns(1);
  cache_first_turn(*runtime, directory.path, first);
  Scheduler after(*runtime, options_with(directory.path));
  auto from_disk =
      testing::run_scripted(*runtime, after.options(), {request_for(second)}, &after).front();
  EXPECT_EQ(after.counts().ssd_cache.hits, 1u);
  EXPECT_GT(from_disk.result.cached_prompt_tokens, 0);

  auto memory_only = options_with({});
  Scheduler reference(*runtime, memory_only);
  testing::run_scripted(*runtime, memory_only, {request_for(first)}, &reference);
  auto from_memory =
      testing::run_scripted(*runtime, memory_only, {request_for(second)}, &reference).front();
  EXPECT_EQ(from_disk.result.cached_prompt_tokens, from_memory.result.cached_prompt_tokens);
  EXPECT_EQ(testing::compare_traces(from_disk, from_memory), "");
}

// A plain model and one with sliding windows (entries that cannot trim).
INSTANTIATE_TEST_SUITE_P(Models, SsdCacheScheduler,
                         ::testing::Values("llama_bf16", "gemma3_text_bf16"));

TEST(SsdCacheFaults, ACorruptedFileIsDeletedAndNeverLoaded) {
  auto runtime = testing::tiny_runtime("llama_bf16", KernelMode::stock);
  TemporaryDirectory directory;
  const auto [first, second] = turns(3);
  cache_first_turn(*runtime, directory.path, first);
  auto files = files_in(directory.path);
  ASSERT_EQ(files.size(), 1u);
  {
    // One bit of one value flipped, deep in the data.
    std::fstream file(files.front(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-100, std::ios::end);
    char byte = 0;
    file.get(byte);
    file.seekp(-100, std::ios::end);
    file.put(static_cast<char>(byte ^ 0x10));
  }
  Scheduler after(*runtime, options_with(directory.path));
  auto trace =
      testing::run_scripted(*runtime, after.options(), {request_for(second)}, &after).front();
  EXPECT_EQ(trace.result.cached_prompt_tokens, 0);
  EXPECT_EQ(after.counts().ssd_cache.rejected, 1u);
  EXPECT_FALSE(fs::exists(files.front()));
  // And the answer is the uncached one.
  auto uncached = options_with({});
  uncached.prompt_cache_bytes = 0;
  auto reference = testing::run_scripted(*runtime, uncached, {request_for(second)}).front();
  EXPECT_EQ(testing::compare_traces(trace, reference), "");
}

// Caches of `tokens.size()` tokens whose keys are the token ids.
CacheList caches_for(const std::vector<int>& tokens) {
  CacheList caches;
  caches.push_back(std::make_unique<StandardKvCache>());
  const int count = static_cast<int>(tokens.size());
  auto keys = mx::reshape(mx::astype(mx::array(tokens.data(), {count}, mx::int32), mx::float32),
                          {1, 1, count, 1});
  caches[0]->update_and_fetch(keys, keys);
  evaluate_cache_state(caches);
  return caches;
}

SsdCacheOptions tier_options(const fs::path& directory, std::size_t cap = std::size_t(1) << 30) {
  return SsdCacheOptions{directory, cap, "identity-of-a-test-model", "/models/test"};
}

TEST(SsdCacheFaults, BrokenAndHalfWrittenFilesAreDeletedAtStart) {
  TemporaryDirectory directory;
  fs::path folder;
  {
    SsdCache tier(tier_options(directory.path));
    tier.spill({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
    tier.spill({5, 6, 7, 8}, caches_for({5, 6, 7, 8}), "kv;|float");
    tier.flush();
    folder = tier.folder();
    EXPECT_EQ(tier.counts().files, 2u);
  }
  auto files = files_in(folder);
  ASSERT_EQ(files.size(), 2u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);         // truncated
  std::ofstream(folder / "garbage.safetensors") << "not a file";  // garbled
  // Left by a writer that was killed (no process has this id).
  std::ofstream(folder / ".deadbeef.tmp-999999999.safetensors") << "half";
  SsdCache tier(tier_options(directory.path));
  EXPECT_EQ(tier.counts().files, 1u);
  EXPECT_EQ(tier.counts().rejected, 2u);
  EXPECT_EQ(files_in(folder), std::vector<fs::path>{files[1]});
  // The whole one still serves (whichever of the two it is).
  auto first = tier.fetch({1, 2, 3, 4, 9}, "kv;|float", 0);
  auto second = tier.fetch({5, 6, 7, 8, 9}, "kv;|float", 0);
  EXPECT_NE(first.has_value(), second.has_value());
  EXPECT_FALSE(tier.fetch({1, 2, 3, 4, 9}, "kv;|quantized", 0));  // another scheme
  EXPECT_FALSE(tier.fetch({5, 6, 7, 8, 9}, "kv;|quantized", 0));
}

TEST(SsdCacheFaults, AnotherModelsFilesAreNeverSeen) {
  TemporaryDirectory directory;
  {
    SsdCache tier(tier_options(directory.path));
    tier.spill({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
    tier.flush();
  }
  auto other = tier_options(directory.path);
  other.identity = "identity-of-another-model";
  SsdCache tier(other);
  EXPECT_EQ(tier.counts().files, 0u);
  EXPECT_FALSE(tier.fetch({1, 2, 3, 4, 5}, "kv;|float", 0));
  EXPECT_EQ(files_in(directory.path).size(), 1u);  // theirs, left alone
}

TEST(SsdCacheCap, TheLeastRecentlyUsedFileGoesFirst) {
  TemporaryDirectory directory;
  std::size_t one = 0;
  {
    SsdCache probe(tier_options(directory.path / "probe"));
    probe.spill({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
    probe.flush();
    one = probe.counts().bytes;
  }
  // Room for two files (their headers differ by a few bytes of tokens).
  SsdCache tier(tier_options(directory.path, one * 2 + 64));
  tier.spill({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
  tier.flush();
  tier.spill({5, 6, 7, 8}, caches_for({5, 6, 7, 8}), "kv;|float");
  tier.flush();
  ASSERT_TRUE(tier.fetch({1, 2, 3, 4, 0}, "kv;|float", 0));  // now the most recent
  tier.spill({9, 10, 11, 12}, caches_for({9, 10, 11, 12}), "kv;|float");
  tier.flush();
  EXPECT_EQ(tier.counts().files, 2u);
  EXPECT_LE(tier.counts().bytes, one * 2 + 64);
  EXPECT_TRUE(tier.fetch({1, 2, 3, 4, 0}, "kv;|float", 0));
  EXPECT_FALSE(tier.fetch({5, 6, 7, 8, 0}, "kv;|float", 0));
  EXPECT_TRUE(tier.fetch({9, 10, 11, 12, 0}, "kv;|float", 0));
}

TEST(SsdCacheCap, APendingQueuePastItsCapDropsEntries) {
  TemporaryDirectory directory;
  auto options = tier_options(directory.path);
  options.pending_cap = 1;
  SsdCache tier(options);
  tier.spill({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
  tier.flush();
  EXPECT_EQ(tier.counts().dropped, 1u);
  EXPECT_EQ(tier.counts().files, 0u);
}

TEST(SsdCacheCap, PrefixCacheEvictionsGoDownAndComeBack) {
  TemporaryDirectory directory;
  SsdCache tier(tier_options(directory.path));
  PrefixCache cache(1);  // holds nothing: every entry goes straight down
  cache.set_tier(&tier);
  cache.insert({1, 2, 3, 4}, caches_for({1, 2, 3, 4}), "kv;|float");
  EXPECT_EQ(cache.entries(), 0u);
  tier.flush();
  EXPECT_EQ(tier.counts().files, 1u);
  PrefixCache roomy(std::size_t(1) << 30);
  roomy.set_tier(&tier);
  auto hit = roomy.lookup({1, 2, 3, 4, 5}, "kv;|float");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tokens, 4);
  auto keys = hit->caches[0]->state()[0];
  EXPECT_EQ(mx::slice(keys, {0, 0, 3, 0}, {1, 1, 4, 1}).item<float>(), 4.0f);
}

}  // namespace
}  // namespace mlx_cpp
