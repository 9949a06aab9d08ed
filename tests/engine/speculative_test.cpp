// Speculative decoding is lossless. Fast path, greedy: a request drafted
// by prompt lookup or by a draft model gets plain decoding's tokens and
// every logprob bit for bit, on every architecture (gemma past its
// sliding window too), alone and batched beside plain rows, and the
// drafts were really proposed, accepted and rejected. Stock path, draft
// model, greedy: mlx-lm's speculative_generate_step, every token and
// logprob bit for bit (tools/oracle/speculative_goldens.py). Sampling:
// the first tokens of many seeded runs are distributed as plain
// sampling's (a chi-square test at p = 0.001), for every sampler feature
// and both sources. Bad drafts and options are refused with the reason.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "../model/golden_case.h"
#include "engine/scheduler.h"
#include "engine/speculative/prompt_lookup.h"
#include "io/error.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_traces;
using testing::GoldenCase;
using testing::ScriptedRequest;

using testing::tiny_runtime;

// A model of the same vocabulary that differs in its numbers: the same
// architecture at another width.
std::string draft_for(const std::string& target) {
  const auto arch = target.substr(0, target.rfind('_'));
  return arch + (target.substr(target.rfind('_')) == "_q4" ? "_q8" : "_q4");
}

// The golden prompts, and one that repeats itself (prompt lookup finds
// its n-grams), each with 24 new tokens. A prompt past the prefill chunk
// of a few cases (2,100 tokens, for the model parity tests) is left out:
// it is 8-token chunks like any other here, 9 times over.
std::vector<ScriptedRequest> requests_of(const GoldenCase& golden, const SpeculativeOptions& spec) {
  constexpr std::size_t kLongestPrompt = 256;
  std::vector<std::vector<int>> prompts;
  for (const auto& [name, prompt] : golden.goldens["prompts"].items())
    if (prompt["ids"].size() <= kLongestPrompt)
      prompts.push_back(prompt["ids"].get<std::vector<int>>());
  prompts.push_back({5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7});
  std::vector<ScriptedRequest> requests;
  for (auto& ids : prompts) {
    ScriptedRequest scripted;
    scripted.request.prompt_ids = ids;
    scripted.request.options.max_tokens = 24;
    scripted.request.options.speculative = spec;
    requests.push_back(std::move(scripted));
  }
  return requests;
}

std::vector<ScriptedRequest> without_speculation(std::vector<ScriptedRequest> requests) {
  for (auto& scripted : requests) scripted.request.options.speculative = {};
  return requests;
}

struct Drafts {
  int proposed = 0, accepted = 0;
};

Drafts drafts_of(const std::vector<testing::RequestTrace>& traces) {
  Drafts total;
  for (const auto& trace : traces) {
    total.proposed += trace.result.stats.draft_proposed;
    total.accepted += trace.result.stats.draft_accepted;
  }
  return total;
}

// A target of each architecture, its draft, on the fast kernels; prompts
// prefilled in 8-token chunks.
class FastGreedySpeculation : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden = GoldenCase::load(GetParam());
    runtime = tiny_runtime(GetParam(), KernelMode::fast);
    draft = tiny_runtime(draft_for(GetParam()), KernelMode::fast);
    options.prefill_chunk = 8;
  }
  GoldenCase golden;
  std::unique_ptr<ModelRuntime> runtime, draft;
  SchedulerOptions options;
};

TEST_P(FastGreedySpeculation, EqualsPlainDecodingBitForBit) {
  Drafts total;
  // Plain decoding does not depend on the speculative options: one run
  // serves every configuration below.
  const auto plain =
      testing::run_alone(*runtime, options, without_speculation(requests_of(golden, {})));
  for (auto kind : {DraftKind::prompt_lookup, DraftKind::draft_model}) {
    // Fixed numbers of drafts, then confidence scheduling (up to 6).
    for (int k : {1, 3, 6, 0}) {
      SCOPED_TRACE(draft_kind_name(kind) + (k ? " k=" + std::to_string(k) : " confidence"));
      SpeculativeOptions spec;
      spec.kind = kind;
      spec.draft_tokens = k ? k : 6;
      spec.confidence = k == 0;
      const auto requests = requests_of(golden, spec);
      Scheduler scheduler(*runtime, options, draft.get());
      // Alone: one request after another on one scheduler.
      std::vector<testing::RequestTrace> speculated;
      for (const auto& request : requests)
        speculated.push_back(testing::run_scripted(*runtime, options, {request}, &scheduler)[0]);
      for (std::size_t i = 0; i < requests.size(); ++i)
        EXPECT_EQ(compare_traces(speculated[i], plain[i]), "") << "request " << i;
      const auto drafts = drafts_of(speculated);
      if (k == 0) continue;  // the schedule may choose plain steps
      EXPECT_GT(drafts.proposed, 0);
      total.proposed += drafts.proposed;
      total.accepted += drafts.accepted;
    }
  }
  // Both ways out of a verify were taken.
  EXPECT_GT(total.accepted, 0);
  EXPECT_LT(total.accepted, total.proposed);
}

TEST_P(FastGreedySpeculation, RowsInABatchWithPlainRowsEqualPlainDecoding) {
  options.max_batch = 6;
  options.prefill_batch = 6;
  SpeculativeOptions lookup, model;
  lookup.kind = DraftKind::prompt_lookup;
  lookup.confidence = false;
  model.kind = DraftKind::draft_model;
  model.draft_tokens = 4;
  std::vector<ScriptedRequest> requests;
  int step = 0;
  for (const auto& spec : {lookup, model, SpeculativeOptions{}})
    for (auto scripted : requests_of(golden, spec)) {
      scripted.submit_at_step = step++ % 4;
      requests.push_back(std::move(scripted));
    }
  const auto plain = testing::run_alone(*runtime, options, without_speculation(requests));
  Scheduler scheduler(*runtime, options, draft.get());
  const auto batched = testing::run_scripted(*runtime, options, requests, &scheduler);
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(compare_traces(batched[i], plain[i]), "") << "request " << i;
  EXPECT_EQ(scheduler.counts().decoding, 0);
  EXPECT_EQ(scheduler.counts().kv_reserved_bytes, 0u);
  // Sequences speculating at once verified in one forward.
  EXPECT_GT(scheduler.counts().shared_verifies, 0);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, FastGreedySpeculation,
                         ::testing::ValuesIn(testing::model_golden_cases()),
                         [](const auto& info) { return info.param; });

class StockSpeculationParity : public ::testing::TestWithParam<std::string> {};

TEST_P(StockSpeculationParity, EqualsMlxLmSpeculativeGenerateStep) {
  const auto directory =
      std::filesystem::path(MLX_CPP_GOLDENS) / "speculative_goldens" / GetParam();
  std::ifstream stream(directory / "goldens.json");
  ASSERT_TRUE(stream) << "missing goldens in " << directory;
  const auto goldens = nlohmann::json::parse(stream);
  const auto rows = mx::load_safetensors((directory / "logits.safetensors").string()).first;
  auto runtime = tiny_runtime(GetParam(), KernelMode::stock);
  auto draft = tiny_runtime(goldens["draft"].get<std::string>(), KernelMode::stock);
  SchedulerOptions options;
  options.max_batch = 1;
  Scheduler scheduler(*runtime, options, draft.get());
  for (const auto& run : goldens["runs"]) {
    SCOPED_TRACE(run["key"].get<std::string>());
    ScriptedRequest scripted;
    scripted.request.prompt_ids = run["ids"].get<std::vector<int>>();
    scripted.request.options.max_tokens = run["max_tokens"].get<int>();
    scripted.request.options.speculative.kind = DraftKind::draft_model;
    scripted.request.options.speculative.draft_tokens = run["draft_tokens"].get<int>();
    scripted.request.options.speculative.confidence = false;  // mlx-lm drafts a fixed number
    const auto trace = testing::run_scripted(*runtime, options, {scripted}, &scheduler)[0];
    const auto expected_tokens = run["tokens"].get<std::vector<int>>();
    ASSERT_EQ(trace.result.completion_ids, expected_tokens);
    const auto& expected = rows.at(run["key"].get<std::string>());
    ASSERT_EQ(static_cast<int>(trace.logprobs.size()), expected.shape(0));
    for (int i = 0; i < expected.shape(0); ++i) {
      auto row = mx::reshape(mx::slice(expected, {i, 0}, {i + 1, expected.shape(1)}), {-1});
      ASSERT_EQ(testing::compare_exact(trace.logprobs[i], row), "") << "token " << i;
    }
    int drafted = 0;
    for (bool from_draft : run["from_draft"]) drafted += from_draft;
    EXPECT_EQ(trace.result.stats.draft_accepted, drafted);
  }
}

INSTANTIATE_TEST_SUITE_P(ArchitecturesBf16AndQ4, StockSpeculationParity,
                         ::testing::Values("llama_bf16", "llama_q4", "llama_untied_bf16",
                                           "llama_untied_q4", "qwen2_bf16", "qwen2_q4",
                                           "qwen3_bf16", "qwen3_q4", "gemma3_text_bf16",
                                           "gemma3_text_q4"),
                         [](const auto& info) { return std::string(info.param); });

// The first three tokens of `runs` seeded runs (seeds 0..runs-1) of
// `request`. The runs go on a little past them: a speculating sequence
// whose step verifies no drafts decodes plainly (pipelined) until its
// drafts pay again, which takes at least a token, so a run of three
// tokens would seldom verify a draft after the first step.
std::map<std::vector<int>, int> outcomes(Scheduler& scheduler, const ModelRuntime& runtime,
                                         TextRequest request, int runs, Drafts& drafts) {
  constexpr std::size_t kCounted = 3;
  std::map<std::vector<int>, int> counts;
  for (int seed = 0; seed < runs; ++seed) {
    ScriptedRequest scripted;
    scripted.request = request;
    scripted.request.options.sampler.seed = seed;
    const auto trace = testing::run_scripted(runtime, {}, {scripted}, &scheduler)[0];
    const auto& ids = trace.result.completion_ids;
    counts[{ids.begin(), ids.begin() + std::min(ids.size(), kCounted)}]++;
    drafts.proposed += trace.result.stats.draft_proposed;
    drafts.accepted += trace.result.stats.draft_accepted;
  }
  return counts;
}

// Two-sample chi-square statistic over outcomes of equal sample sizes
// (cells seen fewer than 10 times in both together are pooled), and the
// critical value at p = 0.001 for its degrees of freedom (Wilson-Hilferty).
std::pair<double, double> chi_square(const std::map<std::vector<int>, int>& a,
                                     const std::map<std::vector<int>, int>& b) {
  std::map<std::vector<int>, std::pair<int, int>> cells;
  for (const auto& [key, count] : a) cells[key].first = count;
  for (const auto& [key, count] : b) cells[key].second = count;
  std::vector<std::pair<int, int>> pooled{{0, 0}};
  for (const auto& [key, pair] : cells) {
    if (pair.first + pair.second < 10) {
      pooled[0].first += pair.first;
      pooled[0].second += pair.second;
    } else {
      pooled.push_back(pair);
    }
  }
  if (pooled[0].first + pooled[0].second == 0) pooled.erase(pooled.begin());
  double statistic = 0;
  for (const auto& [x, y] : pooled) statistic += double(x - y) * (x - y) / (x + y);
  const double df = std::max<double>(1, pooled.size() - 1);
  const double z = 3.090;  // the normal's 0.999 quantile
  const double critical = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  return {statistic, critical};
}

struct SamplingCase {
  std::string name;
  SamplerOptions sampler;
  PenaltyOptions penalties;
};

// The tiny models' logits are steep (at temperature 1 the top token has
// 0.99 of the mass), so temperatures of 2 to 3 spread the outcomes, and
// the filters (which act before the temperature, as mlx-lm's) are set to
// keep a handful of tokens.
std::vector<SamplingCase> sampling_cases() {
  std::vector<SamplingCase> cases;
  auto at = [&cases](const std::string& name, float temperature) -> SamplingCase& {
    cases.push_back({name, {}, {}});
    cases.back().sampler.temperature = temperature;
    return cases.back();
  };
  at("temperature", 2.5f);
  at("top_p", 3.0f).sampler.top_p = 0.999f;
  at("top_k", 3.0f).sampler.top_k = 8;
  at("min_p", 3.0f).sampler.min_p = 0.0002f;
  auto& penalized = at("penalties_and_bias", 2.5f).penalties;
  penalized.repetition_penalty = 1.5f;
  penalized.presence_penalty = 0.5f;
  penalized.logit_bias = {{7, 2.0f}, {8, -3.0f}};
  return cases;
}

// A request whose drafts stop paying decodes plainly in the batched decode
// (pipelined) and takes speculative steps again when the source has drafts
// worth verifying; its tokens and logprobs stay plain decoding's.
TEST(SpeculativeModes, PlainStretchesGoThroughTheBatchedDecodeAndDraftingResumes) {
  // A tiny model whose greedy answer repeats itself for a while (most
  // repeat one token throughout, which lookup always drafts).
  auto runtime = tiny_runtime("apertus_q4", KernelMode::fast);
  SchedulerOptions options;
  options.prefill_chunk = 8;
  ScriptedRequest scripted;
  // Prompt lookup finds the repeated run at once, nothing after it ends.
  scripted.request.prompt_ids = {5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                                 15, 16, 17, 18, 19, 5,  6,  7,  8,  9};
  scripted.request.options.max_tokens = 48;
  scripted.request.options.speculative.kind = DraftKind::prompt_lookup;
  scripted.request.options.speculative.draft_tokens = 4;
  scripted.request.options.speculative.confidence = false;
  const auto plain = testing::run_alone(*runtime, options, without_speculation({scripted}));
  std::vector<int> speculating;  // per step, while the request decodes
  const auto speculated = testing::run_scripted(*runtime, options, {scripted}, nullptr,
                                                [&speculating](const Scheduler& scheduler) {
                                                  const auto counts = scheduler.counts();
                                                  if (counts.decoding == 1)
                                                    speculating.push_back(counts.speculating);
                                                });
  EXPECT_EQ(compare_traces(speculated[0], plain[0]), "");
  // Speculating, then plain, then speculating again.
  const auto plain_at = std::find(speculating.begin(), speculating.end(), 0);
  ASSERT_NE(plain_at, speculating.end()) << "no plain stretch";
  EXPECT_NE(std::find(speculating.begin(), plain_at, 1), plain_at) << "never speculated first";
  EXPECT_NE(std::find(plain_at, speculating.end(), 1), speculating.end()) << "never resumed";
  EXPECT_GT(speculated[0].result.stats.draft_accepted, 0);
}

// Several sequences speculating at once verify in one forward, or, with
// shared_verifies off, each in its own; both give plain decoding's tokens
// and logprobs.
TEST(SpeculativeModes, SharedVerifiesCanBeTurnedOff) {
  auto runtime = tiny_runtime("apertus_q4", KernelMode::fast);
  SchedulerOptions options;
  options.prefill_chunk = 8;
  std::vector<ScriptedRequest> requests;
  for (int shift : {0, 1, 2}) {
    ScriptedRequest scripted;
    for (int id : {5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7})
      scripted.request.prompt_ids.push_back(id + shift);
    scripted.request.options.max_tokens = 24;
    scripted.request.options.speculative.kind = DraftKind::prompt_lookup;
    scripted.request.options.speculative.draft_tokens = 3;
    scripted.request.options.speculative.confidence = false;
    requests.push_back(std::move(scripted));
  }
  const auto plain = testing::run_alone(*runtime, options, without_speculation(requests));
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared verifies" : "a forward per verify");
    options.shared_verifies = shared;
    Scheduler scheduler(*runtime, options);
    const auto speculated = testing::run_scripted(*runtime, options, requests, &scheduler);
    for (std::size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(compare_traces(speculated[i], plain[i]), "") << "request " << i;
    EXPECT_GT(drafts_of(speculated).accepted, 0);
    if (shared)
      EXPECT_GT(scheduler.counts().shared_verifies, 0);
    else
      EXPECT_EQ(scheduler.counts().shared_verifies, 0);
  }
}

TEST(SampledSpeculation, DistributesTokensAsPlainSampling) {
  constexpr int kRuns = 400;
  auto runtime = tiny_runtime("qwen2_q4", KernelMode::fast);
  auto draft = tiny_runtime(draft_for("qwen2_q4"), KernelMode::fast);
  Scheduler scheduler(*runtime, {}, draft.get());
  for (const auto& sampling : sampling_cases()) {
    TextRequest request;
    request.prompt_ids = {5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7};
    request.options.max_tokens = 5;
    request.options.sampler = sampling.sampler;
    request.options.penalties = sampling.penalties;
    Drafts none;
    const auto plain = outcomes(scheduler, *runtime, request, kRuns, none);
    for (auto kind : {DraftKind::prompt_lookup, DraftKind::draft_model}) {
      SCOPED_TRACE(sampling.name + ", " + draft_kind_name(kind));
      Drafts drafts;
      request.options.speculative.kind = kind;
      request.options.speculative.draft_tokens = 2;
      request.options.speculative.confidence = false;
      const auto speculated = outcomes(scheduler, *runtime, request, kRuns, drafts);
      const auto [statistic, critical] = chi_square(speculated, plain);
      EXPECT_LT(statistic, critical) << plain.size() << " outcomes";
      EXPECT_GE(plain.size(), 6u) << "too few outcomes for a test";
      // Not a vacuous pass: drafts were proposed, and both accepted and not.
      EXPECT_GT(drafts.accepted, 0);
      EXPECT_LT(drafts.accepted, drafts.proposed);
    }
  }
}

TEST(SampledSpeculation, TheChiSquareTestTellsDistributionsApart) {
  // Outcomes at a lower temperature (closer to what accepting greedy drafts
  // too often would give) against plain sampling: the test must tell.
  auto runtime = tiny_runtime("qwen2_q4", KernelMode::fast);
  Scheduler scheduler(*runtime, {});
  TextRequest request;
  request.prompt_ids = {5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6, 7};
  request.options.max_tokens = 3;
  request.options.sampler.temperature = 3.0f;
  Drafts drafts;
  const auto warm = outcomes(scheduler, *runtime, request, 400, drafts);
  request.options.sampler.temperature = 2.0f;
  const auto colder = outcomes(scheduler, *runtime, request, 400, drafts);
  const auto [statistic, critical] = chi_square(colder, warm);
  EXPECT_GT(statistic, critical);
}

TEST(PromptLookup, ProposesWhatFollowedTheLatestLongestMatch) {
  // "1 2 3" occurs twice before the end; the latest one is followed by 7 8.
  const std::vector<int> context{1, 2, 3, 4, 5, 1, 2, 3, 7, 8, 9, 1, 2, 3};
  EXPECT_EQ(PromptLookup(3).propose(context, 4).tokens, (std::vector<int>{7, 8, 9, 1}));
  const auto two = PromptLookup(3).propose(context, 2);
  EXPECT_EQ(two.tokens, (std::vector<int>{7, 8}));
  EXPECT_EQ(two.confidence, (std::vector<float>{3, 3}));  // a 3-gram matched
  // No 3-gram or 2-gram recurs, the 1-gram "4" does.
  const auto one = PromptLookup(3).propose({4, 9, 1, 2, 4}, 3);
  EXPECT_EQ(one.tokens, (std::vector<int>{9, 1, 2}));
  EXPECT_EQ(one.confidence, (std::vector<float>{1, 1, 1}));
  // The match may run into the suffix itself (a repeating pattern).
  EXPECT_EQ(PromptLookup(3).propose({6, 6, 6}, 5).tokens, (std::vector<int>{6}));
  EXPECT_TRUE(PromptLookup(3).propose({1, 2, 3}, 3).tokens.empty());
  EXPECT_TRUE(PromptLookup(3).propose({1}, 3).tokens.empty());
}

TEST(PromptLookup, ACopyGoesOnFromWhereItWas) {
  // Two lines alike up to their last token: "5 6 7 1" and "5 6 7 2". A
  // copy of the first line goes on with its own end, not the latest line's.
  PromptLookup lookup(3);
  std::vector<int> context{9, 5, 6, 7, 1, 8, 5, 6, 7, 2, 8, 9, 5};
  auto first = lookup.propose(context, 2);  // after "8 9 5": the 3-gram at the start
  EXPECT_EQ(first.tokens, (std::vector<int>{6, 7}));
  context.insert(context.end(), {6, 7});
  auto next = lookup.propose(context, 2);  // the copy goes on: 1, not 2
  EXPECT_EQ(next.tokens, (std::vector<int>{1, 8}));
  EXPECT_EQ(next.confidence, (std::vector<float>{4, 4}));  // a continued copy
  // When the context leaves the copy, the longest match decides again.
  context.insert(context.end(), {2, 8});
  EXPECT_EQ(lookup.propose(context, 1).tokens, (std::vector<int>{9}));
}

// The message validate() refuses the request with ("" if it does not).
std::string refusal(const Scheduler& scheduler, TextRequest request) {
  try {
    scheduler.validate(request);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(SpeculativeRefusals, NameTheProblem) {
  TextRequest request;
  request.prompt_ids = {1, 2, 3};
  request.options.speculative.kind = DraftKind::prompt_lookup;
  SchedulerOptions batched;
  batched.max_batch = 4;
  auto gemma_stock = tiny_runtime("gemma3_text_q4", KernelMode::stock);
  EXPECT_NE(refusal(Scheduler(*gemma_stock, batched), request).find("--max-batch 1"),
            std::string::npos);
  auto runtime = tiny_runtime("qwen2_q4", KernelMode::fast);
  Scheduler scheduler(*runtime, {});
  EXPECT_EQ(refusal(scheduler, request), "");
  request.options.speculative.kind = DraftKind::draft_model;
  EXPECT_NE(refusal(scheduler, request).find("--draft-model"), std::string::npos);
  request.options.speculative.kind = DraftKind::prompt_lookup;
  request.options.speculative.draft_tokens = 0;
  EXPECT_NE(refusal(scheduler, request).find("draft tokens"), std::string::npos);
  request.options.speculative.draft_tokens = 4;
  request.options.speculative.ngram = 0;
  EXPECT_NE(refusal(scheduler, request).find("n-gram"), std::string::npos);
  EXPECT_THROW(parse_draft_kind("medusa"), Error);
}

}  // namespace
}  // namespace mlx_cpp
