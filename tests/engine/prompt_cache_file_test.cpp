// Prompt-cache files against mlx-lm (tools/oracle/kv_quant_goldens.py): for
// every architecture x {bf16 (float32 for experts), q4}, a file mlx-lm's
// save_prompt_cache wrote, in float and quantized KV, continued by the stock
// decode loop and by a stock scheduler row gives mlx-lm's
// generate_step(prompt_cache=load_prompt_cache(...)) logits bit for bit;
// the file mlx-cpp writes from its own prefill holds the same tensors and
// metadata as mlx-lm's. Then what a bad file gets: an error naming the
// problem, never a load.
#include "model/prompt_cache_file.h"

#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include <filesystem>
#include <fstream>

#include "../model/golden_case.h"
#include "engine/cached_prompt.h"
#include "engine/scheduler.h"
#include "io/error.h"
#include "kv_quant_cases.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
namespace fs = std::filesystem;
using testing::compare_exact;
using testing::GoldenCase;
using testing::ScriptedRequest;

constexpr const char* kSuite = testing::kKvQuantSuite;
constexpr int kSteps = 8;

KvCacheScheme scheme_of(const nlohmann::json& entry) {
  KvCacheScheme scheme;
  if (!entry["bits"].is_null())
    scheme.quantization = KvQuantization{entry["bits"].get<int>(), entry["group_size"].get<int>()};
  scheme.quantized_start = entry["start"].get<int>();
  return scheme;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// A directory of its own, removed at the end.
struct TemporaryDirectory {
  fs::path path;
  TemporaryDirectory() {
    path = fs::temp_directory_path() /
           ("mlx-cpp-prompt-cache-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TemporaryDirectory() { fs::remove_all(path); }
};

class PromptCacheParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden_ = GoldenCase::load(GetParam(), kSuite);
    const auto ids = golden_.goldens["ids"].get<std::vector<int>>();
    const int prefix = golden_.goldens["prompt_cache"]["prefix_length"].get<int>();
    prefix_.assign(ids.begin(), ids.begin() + prefix);
    suffix_.assign(ids.begin() + prefix, ids.end());
    auto logits =
        mx::load_safetensors((golden_.directory / "prompt_cache_logits.safetensors").string());
    logits_ = logits.first;
  }
  const nlohmann::json& schemes() const { return golden_.goldens["prompt_cache"]["schemes"]; }
  fs::path file_of(const std::string& scheme) const {
    return golden_.directory / ("prompt_cache_" + scheme + ".safetensors");
  }
  GoldenCase golden_;
  std::vector<int> prefix_, suffix_;
  std::unordered_map<std::string, mx::array> logits_;
};

TEST_P(PromptCacheParity, StockLoopContinuesMlxLmsFileBitForBit) {
  auto loaded = load_model(golden_.model_directory, {KernelMode::stock});
  for (const auto& [name, entry] : schemes().items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("scheme " + name);
    auto contents = load_prompt_cache(file_of(name));
    EXPECT_EQ(contents.metadata.at("model"), "tiny");
    check_cached_prompt(contents.caches, *loaded.model, scheme_of(entry));
    ASSERT_EQ(contents.caches.front()->offset(), static_cast<int>(prefix_.size()));
    GenerationOptions options;
    options.max_tokens = kSteps;
    options.kv_cache = scheme_of(entry);
    std::vector<int> tokens;
    std::vector<mx::array> logits;
    generate_tokens(
        *loaded.model, contents.caches, suffix_, options, {},
        [&](const GeneratedToken& token) {
          tokens.push_back(token.id);
          return true;
        },
        {}, [&](const mx::array& step) { logits.push_back(step); });
    EXPECT_EQ(tokens, entry["greedy"].get<std::vector<int>>());
    EXPECT_EQ(compare_exact(mx::concatenate(logits, 0), logits_.at(name)), "");
  }
}

TEST_P(PromptCacheParity, StockSchedulerRowContinuesMlxLmsFileBitForBit) {
  auto runtime = ModelRuntime::for_token_ids(
      load_model(golden_.model_directory, {KernelMode::stock}), {0, KernelMode::stock});
  for (const auto& [name, entry] : schemes().items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("scheme " + name);
    ScriptedRequest scripted;
    scripted.request.prompt_ids = suffix_;
    scripted.request.options.max_tokens = kSteps;
    scripted.request.options.kv_cache = scheme_of(entry);
    scripted.request.cached_prompt = cached_prompt_from(load_prompt_cache(file_of(name)),
                                                        runtime->model(), scheme_of(entry), name);
    SchedulerOptions options;
    options.max_batch = 1;
    options.prompt_cache_bytes = 1 << 30;
    Scheduler scheduler(*runtime, options);
    auto trace = testing::run_scripted(*runtime, options, {scripted}, &scheduler).front();
    EXPECT_EQ(trace.result.completion_ids, entry["greedy"].get<std::vector<int>>());
    EXPECT_EQ(trace.result.cached_prompt_tokens, static_cast<int>(prefix_.size()));
    const auto& logits = logits_.at(name);
    ASSERT_EQ(static_cast<int>(trace.logprobs.size()), kSteps);
    for (int step = 0; step < kSteps; ++step) {
      auto row = mx::slice(logits, {step, 0}, {step + 1, logits.shape(1)});
      auto expected = mx::astype(
          mx::squeeze(mx::subtract(row, mx::logsumexp(row, /*keepdims=*/true)), 0), mx::float32);
      EXPECT_EQ(compare_exact(trace.logprobs[step], expected), "") << "step " << step;
    }
    // Its caches hold tokens the prefix cache cannot name: never kept.
    EXPECT_EQ(scheduler.prefix_cache().entries(), 0u);
  }
}

TEST_P(PromptCacheParity, OwnFileHoldsWhatMlxLmsHolds) {
  auto loaded = load_model(golden_.model_directory, {KernelMode::stock});
  TemporaryDirectory directory;
  for (const auto& [name, entry] : schemes().items()) {
    SCOPED_TRACE("scheme " + name);
    GenerationOptions options;
    options.max_tokens = 0;
    options.kv_cache = scheme_of(entry);
    auto caches = loaded.model->make_caches();
    if (entry.contains("mlx_lm_error")) {
      // mlx-lm cannot attend over a quantized cache of this model: such a
      // file is refused too (made here from float caches quantized).
      generate_tokens(*loaded.model, caches, prefix_, {}, {},
                      [](const GeneratedToken&) { return true; });
      for (auto& cache : caches)
        if (auto quantized = cache->quantized(*scheme_of(entry).quantization))
          cache = std::move(quantized);
      const auto error = error_of([&] { check_cached_prompt(caches, *loaded.model, {}); });
      EXPECT_NE(error.find("quantized"), std::string::npos) << error;
      continue;
    }
    generate_tokens(*loaded.model, caches, prefix_, options, {},
                    [](const GeneratedToken&) { return true; });
    const auto ours = directory.path / (name + ".safetensors");
    save_prompt_cache(ours, caches, {{"model", "tiny"}, {"tokenizer_config", "{}"}});
    auto [our_arrays, our_metadata] = mx::load_safetensors(ours.string());
    auto [their_arrays, their_metadata] = mx::load_safetensors(file_of(name).string());
    EXPECT_EQ(our_metadata, their_metadata);
    ASSERT_EQ(our_arrays.size(), their_arrays.size());
    for (const auto& [key, array] : their_arrays) {
      ASSERT_TRUE(our_arrays.count(key)) << key;
      EXPECT_EQ(compare_exact(our_arrays.at(key), array), "") << key;
    }
  }
  // Written durably: nothing but the files is left in the directory.
  int files = 0;
  for (const auto& file : fs::directory_iterator(directory.path)) {
    EXPECT_EQ(file.path().filename().string().front() != '.', true) << file.path();
    ++files;
  }
  EXPECT_GT(files, 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, PromptCacheParity, ::testing::ValuesIn(testing::kv_quant_cases()));

// ---- Bad files ----------------------------------------------------------

class BadPromptCacheFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = GoldenCase::load(testing::kv_quant_cases().front(), kSuite);
    good_ = golden_.directory / "prompt_cache_float.safetensors";
    auto [arrays, metadata] = mx::load_safetensors(good_.string());
    arrays_ = arrays;
    metadata_ = metadata;
  }
  // The good file with `edit` applied to its tensors and metadata.
  fs::path edited(const std::function<void(std::unordered_map<std::string, mx::array>&,
                                           std::unordered_map<std::string, std::string>&)>& edit) {
    auto arrays = arrays_;
    auto metadata = metadata_;
    edit(arrays, metadata);
    const auto path = directory_.path / ("edited" + std::to_string(++count_) + ".safetensors");
    mx::save_safetensors(path.string(), arrays, metadata);
    return path;
  }
  std::string load_error(const fs::path& path) {
    return error_of([&] { load_prompt_cache(path); });
  }
  GoldenCase golden_;
  fs::path good_;
  std::unordered_map<std::string, mx::array> arrays_;
  std::unordered_map<std::string, std::string> metadata_;
  TemporaryDirectory directory_;
  int count_ = 0;
};

TEST_F(BadPromptCacheFiles, TruncatedOrGarbledFilesAreRefused) {
  const auto truncated = directory_.path / "truncated.safetensors";
  fs::copy_file(good_, truncated);
  fs::resize_file(truncated, fs::file_size(good_) / 2);
  EXPECT_NE(load_error(truncated).find("truncated.safetensors"), std::string::npos);
  const auto garbage = directory_.path / "garbage.safetensors";
  std::ofstream(garbage) << "not a safetensors file at all";
  EXPECT_NE(load_error(garbage), "");
  EXPECT_NE(load_error(directory_.path / "missing.safetensors"), "");
}

TEST_F(BadPromptCacheFiles, ItemsThatDoNotFitTheirKindAreRefused) {
  auto unknown = edited([](auto&, auto& metadata) { metadata["1.0"] = "MambaCache"; });
  EXPECT_NE(load_error(unknown).find("MambaCache"), std::string::npos) << load_error(unknown);
  auto missing = edited([](auto& arrays, auto&) { arrays.erase("0.1"); });
  EXPECT_NE(load_error(missing).find("lacks item 1"), std::string::npos) << load_error(missing);
  auto past =
      edited([](auto& arrays, auto&) { arrays.insert_or_assign("0.2", mx::array(100000)); });
  EXPECT_NE(load_error(past).find("offset 100000"), std::string::npos) << load_error(past);
  auto flat = edited([](auto& arrays, auto&) {
    arrays.insert_or_assign("0.0", mx::zeros({4, 4}, mx::bfloat16));
  });
  EXPECT_NE(load_error(flat).find("dimensions"), std::string::npos) << load_error(flat);
  auto stray = edited([](auto& arrays, auto&) { arrays.insert_or_assign("99.0", mx::array(1)); });
  EXPECT_NE(load_error(stray).find("99.0"), std::string::npos) << load_error(stray);
  auto none = edited([](auto&, auto& metadata) {
    for (auto it = metadata.begin(); it != metadata.end();)
      it = it->first.rfind("1.", 0) == 0 ? metadata.erase(it) : std::next(it);
  });
  EXPECT_NE(load_error(none).find("not a prompt cache"), std::string::npos) << load_error(none);
}

TEST_F(BadPromptCacheFiles, CachesOfAnotherShapeAreRefused) {
  // Files that read well but do not fit the model: what a file of another
  // model would hold.
  auto model = load_model(golden_.model_directory, {KernelMode::stock});
  auto check = [&](const fs::path& path) {
    auto contents = load_prompt_cache(path);
    return error_of([&] { check_cached_prompt(contents.caches, *model.model, {}); });
  };
  EXPECT_EQ(check(good_), "");
  auto heads = edited([](auto& arrays, auto&) {
    for (const char* key : {"0.0", "0.1"})
      arrays.insert_or_assign(key, mx::concatenate({arrays.at(key), arrays.at(key)}, 1));
  });
  EXPECT_NE(check(heads).find("heads"), std::string::npos) << check(heads);
  auto dtype = edited([](auto& arrays, auto&) {
    for (const char* key : {"0.0", "0.1"})
      arrays.insert_or_assign(key, mx::astype(arrays.at(key), mx::float16));
  });
  EXPECT_NE(check(dtype).find("float16"), std::string::npos) << check(dtype);
  auto fewer = edited([](auto& arrays, auto& metadata) {
    int layers = 0;
    while (metadata.count("1." + std::to_string(layers))) ++layers;
    const std::string last = std::to_string(layers - 1) + ".";
    metadata.erase("1." + std::to_string(layers - 1));
    for (auto it = arrays.begin(); it != arrays.end();)
      it = it->first.rfind(last, 0) == 0 ? arrays.erase(it) : std::next(it);
    for (auto it = metadata.begin(); it != metadata.end();)
      it = it->second.rfind(last, 0) == 0 ? metadata.erase(it) : std::next(it);
  });
  EXPECT_NE(check(fewer).find("layers"), std::string::npos) << check(fewer);
}

TEST(PromptCacheSave, AnEmptyCacheOrUnwritablePathIsAnError) {
  CacheList caches;
  caches.push_back(std::make_unique<StandardKvCache>());
  EXPECT_NE(error_of([&] { save_prompt_cache("/tmp/never.safetensors", caches, {}); }), "");
  EXPECT_FALSE(fs::exists("/tmp/never.safetensors"));
  caches.front()->update_and_fetch(mx::zeros({1, 1, 2, 8}), mx::zeros({1, 1, 2, 8}));
  EXPECT_NE(
      error_of([&] { save_prompt_cache("/nonexistent-directory/x.safetensors", caches, {}); }), "");
}

}  // namespace
}  // namespace mlx_cpp
