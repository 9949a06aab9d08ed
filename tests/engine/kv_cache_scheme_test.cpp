// Quantized KV caches against mlx-lm (tools/oracle/kv_quant_goldens.py):
// for every architecture x {bf16 (float32 for experts), q4} and every
// scheme, the stock decode loop and a stock scheduler of one row give
// mlx-lm's generate_step(kv_bits=...) logits bit for bit and its greedy
// tokens; the fast path keeps the fast-kernel contract; batched rows equal
// the same requests alone; a model mlx-lm cannot run so is refused. Then
// the scheme's own rules: validation, signatures, the prefix cache and
// memory admission.
#include "engine/kv_cache_scheme.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <fstream>

#include "../model/golden_case.h"
#include "engine/scheduler.h"
#include "io/error.h"
#include "kv_quant_cases.h"
#include "model/quantized_kv_cache.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_exact;
using testing::GoldenCase;
using testing::ScriptedRequest;

constexpr const char* kSuite = testing::kKvQuantSuite;
// The fast path's bound on decode-step logits (tests/model/fast_kernels_test).
constexpr float kDecodeRelativeLogitError = 0.10f;

KvCacheScheme scheme_of(const nlohmann::json& entry) {
  KvCacheScheme scheme;
  scheme.quantization = KvQuantization{entry["bits"].get<int>(), entry["group_size"].get<int>()};
  scheme.quantized_start = entry["start"].get<int>();
  scheme.float_layers = entry["float_layers"].get<std::vector<int>>();
  return scheme;
}

struct Run {
  std::vector<int> tokens;
  std::vector<mx::array> logits;
};

Run generate(const LoadedModel& loaded, const std::vector<int>& prompt, int steps,
             const KvCacheScheme& scheme, int prefill_step, KernelMode kernels) {
  Run run;
  auto caches = loaded.model->make_caches();
  GenerationOptions options;
  options.max_tokens = steps;
  options.kv_cache = scheme;
  options.prefill_step_size = prefill_step;
  options.kernels = kernels;
  generate_tokens(
      *loaded.model, caches, prompt, options, {},
      [&](const GeneratedToken& token) {
        run.tokens.push_back(token.id);
        return true;
      },
      {}, [&](const mx::array& logits) { run.logits.push_back(logits); });
  return run;
}

std::unique_ptr<ModelRuntime> runtime_of(const GoldenCase& golden, KernelMode kernels) {
  return ModelRuntime::for_token_ids(load_model(golden.model_directory, {kernels}), {0, kernels});
}

float top_two_gap(const mx::array& logits) {
  auto sorted = mx::sort(mx::flatten(logits));
  const int n = sorted.size();
  return (mx::slice(sorted, {n - 1}, {n}) - mx::slice(sorted, {n - 2}, {n - 1})).item<float>();
}

class KvQuantParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = GoldenCase::load(GetParam(), kSuite); }
  std::vector<int> prompt() const { return golden_.goldens["ids"].get<std::vector<int>>(); }
  int steps() const { return 8; }
  GoldenCase golden_;
};

TEST_P(KvQuantParity, StockDecodeLoopIsMlxLmGenerateStepBitForBit) {
  auto loaded = load_model(golden_.model_directory, {KernelMode::stock});
  for (const auto& [name, entry] : golden_.goldens["schemes"].items()) {
    SCOPED_TRACE("scheme " + name);
    const auto scheme = scheme_of(entry);
    const int prefill = entry["prefill_step"].get<int>();
    if (entry.contains("mlx_lm_error")) {
      // mlx-lm's module cannot read a quantized cache: refused, by name.
      try {
        generate(loaded, prompt(), steps(), scheme, prefill, KernelMode::stock);
        ADD_FAILURE() << "ran a scheme mlx-lm refuses (" << entry["mlx_lm_error"] << ")";
      } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("quantized KV caches are not available"),
                  std::string::npos)
            << error.what();
      }
      continue;
    }
    auto run = generate(loaded, prompt(), steps(), scheme, prefill, KernelMode::stock);
    EXPECT_EQ(run.tokens, entry["greedy"].get<std::vector<int>>());
    EXPECT_EQ(compare_exact(mx::concatenate(run.logits, 0), golden_.logits.at(name)), "");
  }
}

TEST_P(KvQuantParity, StockSchedulerRowIsMlxLmGenerateStepBitForBit) {
  auto runtime = runtime_of(golden_, KernelMode::stock);
  for (const auto& [name, entry] : golden_.goldens["schemes"].items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("scheme " + name);
    ScriptedRequest scripted;
    scripted.request.prompt_ids = prompt();
    scripted.request.options.max_tokens = steps();
    scripted.request.options.kv_cache = scheme_of(entry);
    SchedulerOptions options;
    options.max_batch = 1;
    options.prefill_chunk = entry["prefill_step"].get<int>();
    auto trace = testing::run_scripted(*runtime, options, {scripted}).front();
    EXPECT_EQ(trace.result.completion_ids, entry["greedy"].get<std::vector<int>>());
    const auto& logits = golden_.logits.at(name);
    ASSERT_EQ(static_cast<int>(trace.logprobs.size()), steps());
    for (int step = 0; step < steps(); ++step) {
      auto row = mx::slice(logits, {step, 0}, {step + 1, logits.shape(1)});
      auto expected = mx::astype(
          mx::squeeze(mx::subtract(row, mx::logsumexp(row, /*keepdims=*/true)), 0), mx::float32);
      EXPECT_EQ(compare_exact(trace.logprobs[step], expected), "") << "step " << step;
    }
  }
}

float relative_error(const mx::array& reference, const mx::array& other) {
  auto expected = mx::astype(reference, mx::float32);
  const float error =
      mx::max(mx::abs(mx::subtract(expected, mx::astype(other, mx::float32)))).item<float>();
  return error / mx::max(mx::abs(expected)).item<float>();
}

// The fast-kernel contract under a quantized cache. Quantization is a step
// function: where the two paths' float keys differ by a rounding, a code
// can land one step apart, so the fast path may move a logit by as much as
// the quantization itself does. The bound is the float fast path's decode
// bound plus the quantization's own effect on this case (the stock path
// with float caches against the stock path with this scheme, over the
// steps where both chose the same tokens); greedy tokens must match but
// after a near tie.
TEST_P(KvQuantParity, FastPathKeepsTheFastKernelContract) {
  auto fast = load_model(golden_.model_directory, {KernelMode::fast});
  auto stock = load_model(golden_.model_directory, {KernelMode::stock});
  for (const auto& [name, entry] : golden_.goldens["schemes"].items()) {
    if (entry.contains("mlx_lm_error")) continue;
    SCOPED_TRACE("scheme " + name);
    const int prefill = entry["prefill_step"].get<int>();
    const auto expected = entry["greedy"].get<std::vector<int>>();
    const auto& logits = golden_.logits.at(name);
    auto stock_row = [&](int step) {
      return mx::slice(logits, {step, 0}, {step + 1, logits.shape(1)});
    };
    auto float_run = generate(stock, prompt(), steps(), {}, prefill, KernelMode::stock);
    float quantization_effect = 0;
    for (int step = 0; step < steps(); ++step) {
      quantization_effect =
          std::max(quantization_effect, relative_error(stock_row(step), float_run.logits[step]));
      if (float_run.tokens[step] != expected[step]) break;
    }
    const float relative_bound = kDecodeRelativeLogitError + quantization_effect;
    auto run = generate(fast, prompt(), steps(), scheme_of(entry), prefill, KernelMode::fast);
    float worst = 0;
    for (int step = 0; step < steps(); ++step) {
      const float error = relative_error(stock_row(step), run.logits[step]);
      worst = std::max(worst, error);
      EXPECT_LE(error, relative_bound) << "step " << step;
      if (run.tokens[step] == expected[step]) continue;
      auto row = mx::astype(stock_row(step), mx::float32);
      const float gap = top_two_gap(row);
      EXPECT_LE(gap, relative_bound * mx::max(mx::abs(row)).item<float>())
          << "greedy tokens differ at step " << step << " without a near tie";
      break;
    }
    std::cout << "[ max error ] " << GetParam() << " " << name << ": " << 100 * worst
              << "% of the largest logit; the quantization itself " << 100 * quantization_effect
              << "%\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, KvQuantParity, ::testing::ValuesIn(testing::kv_quant_cases()));

// Rows under quantized schemes (and one in float) batched on the fast path
// equal each request run alone, bit for bit.
TEST(KvQuantBatch, FastRowsEqualTheRequestsAlone) {
  for (const char* name : {"llama_q4", "qwen3_bf16", "gemma3_text_q4"}) {
    SCOPED_TRACE(name);
    auto golden = GoldenCase::load(name, kSuite);
    auto runtime = runtime_of(golden, KernelMode::fast);
    const auto ids = golden.goldens["ids"].get<std::vector<int>>();
    std::vector<ScriptedRequest> requests;
    for (int i = 0; i < 4; ++i) {
      ScriptedRequest scripted;
      scripted.request.prompt_ids.assign(ids.begin(), ids.begin() + 10 + 7 * i);
      scripted.request.options.max_tokens = 12;
      scripted.submit_at_step = i;
      if (i != 2) {
        scripted.request.options.kv_cache.quantization = KvQuantization{i == 1 ? 4 : 8, 64};
        scripted.request.options.kv_cache.quantized_start = 4 * i;
      }
      requests.push_back(scripted);
    }
    SchedulerOptions options;
    options.prefill_chunk = 8;
    const auto alone = testing::run_alone(*runtime, options, requests);
    options.max_batch = 4;
    options.prefill_batch = 4;
    const auto batched = testing::run_scripted(*runtime, options, requests);
    for (std::size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(testing::compare_traces(batched[i], alone[i]), "") << "request " << i;
  }
}

// A prefix cache entry is found only under the scheme that made it.
TEST(KvQuantPrefixCache, EntriesAreKeyedByTheScheme) {
  auto golden = GoldenCase::load("llama_bf16", kSuite);
  auto runtime = runtime_of(golden, KernelMode::fast);
  SchedulerOptions options;
  options.prompt_cache_bytes = 64 << 20;
  Scheduler scheduler(*runtime, options);
  const auto ids = golden.goldens["ids"].get<std::vector<int>>();
  auto request = [&](std::optional<KvQuantization> quantization) {
    ScriptedRequest scripted;
    scripted.request.prompt_ids = ids;
    scripted.request.options.max_tokens = 4;
    scripted.request.options.kv_cache.quantization = quantization;
    scripted.request.options.kv_cache.quantized_start = 0;
    return testing::run_scripted(*runtime, options, {scripted}, &scheduler).front().result;
  };
  EXPECT_EQ(request(std::nullopt).cached_prompt_tokens, 0);
  EXPECT_EQ(request(KvQuantization{8, 64}).cached_prompt_tokens, 0);
  EXPECT_EQ(request(KvQuantization{4, 64}).cached_prompt_tokens, 0);
  const auto again = request(KvQuantization{8, 64});
  EXPECT_EQ(again.cached_prompt_tokens, static_cast<int>(ids.size()) - 1);
  const auto float_again = request(std::nullopt);
  EXPECT_EQ(float_again.cached_prompt_tokens, static_cast<int>(ids.size()) - 1);
}

// Admission counts a quantized sequence's caches as they are stored: the
// reservation covers what the caches really held, and is smaller than a
// float sequence's.
TEST(KvQuantAdmission, ReservationCoversTheRealBytesAndShrinks) {
  auto golden = GoldenCase::load("qwen3_bf16", kSuite);
  auto loaded = load_model(golden.model_directory, {KernelMode::stock});
  const int prefill = 16;
  MemoryAdmission admission(*loaded.model, 1ull << 40, 4096, prefill);
  KvCacheScheme scheme;
  scheme.quantization = KvQuantization{4, 64};
  scheme.quantized_start = 20;
  for (int tokens : {10, 30, 300}) {
    SCOPED_TRACE(tokens);
    std::vector<int> prompt(tokens - 1, 7);
    auto caches = loaded.model->make_caches();
    GenerationOptions options;
    options.max_tokens = 1;
    options.kv_cache = scheme;
    options.prefill_step_size = prefill;
    generate_tokens(*loaded.model, caches, prompt, options, {},
                    [](const GeneratedToken&) { return true; });
    evaluate_cache_state(caches);
    EXPECT_LE(cache_list_bytes(caches), admission.sequence_bytes(tokens, scheme));
  }
  EXPECT_LT(admission.sequence_bytes(4096, scheme), admission.sequence_bytes(4096) / 2);
  EXPECT_EQ(admission.sequence_bytes(10, scheme), admission.sequence_bytes(10));
}

TEST(KvCacheScheme, ValidationNamesTheProblem) {
  auto golden = GoldenCase::load("llama_bf16", kSuite);
  auto loaded = load_model(golden.model_directory, {KernelMode::stock});
  auto message = [&](KvCacheScheme scheme) {
    try {
      validate_kv_cache_scheme(scheme, *loaded.model);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  KvCacheScheme scheme;
  EXPECT_EQ(message(scheme), "");
  scheme.quantization = KvQuantization{4, 64};
  EXPECT_EQ(message(scheme), "");
  scheme.quantization = KvQuantization{7, 64};
  EXPECT_NE(message(scheme).find("bits must be"), std::string::npos);
  scheme.quantization = KvQuantization{4, 48};
  EXPECT_NE(message(scheme).find("group size must be"), std::string::npos);
  scheme.quantization = KvQuantization{4, 128};  // the heads are 64 wide
  EXPECT_NE(message(scheme).find("does not divide the head dimension 64"), std::string::npos);
  scheme.quantization = KvQuantization{4, 64};
  scheme.float_layers = {0, -5};
  EXPECT_NE(message(scheme).find("outside the model's"), std::string::npos);
  scheme.float_layers = {};
  scheme.quantized_start = -1;
  EXPECT_NE(message(scheme).find("start must be"), std::string::npos);
}

TEST(KvCacheScheme, LayersAndSignatures) {
  EXPECT_EQ(parse_layer_list("0,1,-1"), (std::vector<int>{0, 1, -1}));
  EXPECT_THROW(parse_layer_list("0,,1"), Error);
  EXPECT_THROW(parse_layer_list("first"), Error);
  EXPECT_THROW(parse_layer_list(""), Error);
  KvCacheScheme scheme;
  scheme.quantization = KvQuantization{4, 64};
  scheme.float_layers = {0, -1};
  EXPECT_FALSE(scheme.quantizes_layer(0, 4));
  EXPECT_TRUE(scheme.quantizes_layer(1, 4));
  EXPECT_TRUE(scheme.quantizes_layer(2, 4));
  EXPECT_FALSE(scheme.quantizes_layer(3, 4));
  auto other = scheme;
  other.quantized_start = 0;
  EXPECT_NE(scheme.signature(), other.signature());
  other = scheme;
  other.quantization->bits = 8;
  EXPECT_NE(scheme.signature(), other.signature());
  EXPECT_NE(scheme.signature(), KvCacheScheme{}.signature());
}

// The quantized cache itself: packed storage grown in steps, trimming by
// offset, clones independent of the original.
TEST(QuantizedKvCache, GrowsTrimsAndClones) {
  QuantizedKvCache cache(KvQuantization{8, 32});
  auto tokens = [](int count, float value) {
    return mx::full({1, 2, count, 64}, value, mx::float32);
  };
  auto [keys, values] = cache.update_and_fetch_packed(tokens(5, 1.0f), tokens(5, 2.0f));
  EXPECT_EQ(keys.codes.shape(), (mx::Shape{1, 2, 5, 16}));  // 64 codes of 8 bits in 16 words
  EXPECT_EQ(keys.scales.shape(), (mx::Shape{1, 2, 5, 2}));
  EXPECT_EQ(cache.byte_size(), 2u * 2 * 256 * (16 * 4 + 2 * 2 * 4));
  auto clone = cache.clone();
  EXPECT_EQ(cache.trim(2), 2);
  EXPECT_EQ(cache.offset(), 3);
  EXPECT_EQ(clone->offset(), 5);
  auto [plain_keys, plain_values] = cache.update_and_fetch(tokens(1, 3.0f), tokens(1, 4.0f));
  EXPECT_EQ(plain_keys.shape(), (mx::Shape{1, 2, 4, 64}));
  EXPECT_EQ(mx::max(mx::abs(mx::subtract(mx::slice(plain_values, {0, 0, 3, 0}, {1, 2, 4, 64}),
                                         mx::array(4.0f))))
                .item<float>(),
            0.0f);
  EXPECT_TRUE(cache.signature() != StandardKvCache().signature());
}

}  // namespace
}  // namespace mlx_cpp
