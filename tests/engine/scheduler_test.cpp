// The scheduler's contracts. Fast path: every row of a batch (1, 2, 5 and
// 16 rows; rows joining and leaving mid-flight; prompts prefilled in chunks
// across steps; greedy, seeded and penalized sampling) equals the same
// request run alone, token for token and every logprob bit for bit. Stock
// path: a scheduler of one row is mlx-lm's generate_step (its goldens). The
// prefix cache: two clients taking turns both keep their conversation, with
// exact cached token counts, and a cached turn answers as a cold one does.
#include "engine/scheduler.h"

#include <gtest/gtest.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include "../model/golden_case.h"
#include "io/error.h"
#include "scheduler_harness.h"

namespace mlx_cpp {
namespace {
namespace mx = mlx::core;
using testing::compare_traces;
using testing::GoldenCase;
using testing::ScriptedRequest;

std::unique_ptr<ModelRuntime> tiny_runtime(const GoldenCase& golden, KernelMode kernels) {
  return ModelRuntime::for_token_ids(load_model(golden.model_directory, {kernels}), {0, kernels});
}

// Deterministic prompts of 3 to 44 tokens over the tiny models' 512 ids.
std::vector<int> prompt_of(int index, int length) {
  std::vector<int> ids;
  for (int i = 0; i < length; ++i) ids.push_back((index * 131 + i * 37 + i * i) % 512);
  return ids;
}

// Sixteen requests: lengths from 3 to 44 tokens (longer than gemma's
// 16-token window and than the 8-token prefill chunk), 4 to 14 new
// tokens, greedy or seeded sampling, some penalized, joining at steps 0
// to 9.
std::vector<ScriptedRequest> mixed_requests() {
  std::vector<ScriptedRequest> requests;
  for (int i = 0; i < 16; ++i) {
    ScriptedRequest scripted;
    auto& request = scripted.request;
    request.prompt_ids = prompt_of(i, 3 + (i * 7) % 42);
    request.options.max_tokens = 4 + (i * 5) % 11;
    auto& sampler = request.options.sampler;
    if (i % 3 == 1) {
      sampler.temperature = 0.8f;
      sampler.seed = 100 + i;
    } else if (i % 3 == 2) {
      sampler.temperature = 1.0f;
      sampler.top_p = 0.9f;
      sampler.top_k = 40;
      sampler.seed = 200 + i;
    }
    if (i % 4 == 3) request.options.penalties.repetition_penalty = 1.3f;
    scripted.submit_at_step = (i % 4) * 3;
    requests.push_back(std::move(scripted));
  }
  return requests;
}

class FastBatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(FastBatchInvariance, EveryRowEqualsTheRequestAlone) {
  auto golden = GoldenCase::load(GetParam());
  auto runtime = tiny_runtime(golden, KernelMode::fast);
  SchedulerOptions options;
  options.prefill_chunk = 8;
  const auto requests = mixed_requests();
  const auto alone = testing::run_alone(*runtime, options, requests);
  for (int rows : {1, 2, 5, 16}) {
    SCOPED_TRACE("max_batch " + std::to_string(rows));
    options.max_batch = rows;
    options.prefill_batch = rows;
    const auto batched = testing::run_scripted(*runtime, options, requests);
    for (std::size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(compare_traces(batched[i], alone[i]), "") << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FastBatchInvariance,
                         ::testing::ValuesIn(testing::model_golden_cases()));

class StockSchedulerParity : public ::testing::TestWithParam<std::string> {};

// A scheduler of one row on the stock path is mlx-lm's generate_step: the
// same greedy tokens and, from the same logits, the same logprobs.
TEST_P(StockSchedulerParity, OneRowIsMlxLmGenerateStep) {
  auto golden = GoldenCase::load(GetParam());
  auto runtime = tiny_runtime(golden, KernelMode::stock);
  for (const auto& [name, prompt] : golden.goldens["prompts"].items()) {
    SCOPED_TRACE(name);
    ScriptedRequest scripted;
    scripted.request.prompt_ids = prompt["ids"].get<std::vector<int>>();
    const auto greedy = prompt["greedy"].get<std::vector<int>>();
    scripted.request.options.max_tokens = static_cast<int>(greedy.size());
    SchedulerOptions options;
    options.max_batch = 1;
    auto trace = testing::run_scripted(*runtime, options, {scripted}).front();
    EXPECT_EQ(trace.result.completion_ids, greedy);
    const auto& logits = golden.logits.at(name + ".generation");  // [steps, vocab]
    ASSERT_EQ(trace.logprobs.size(), greedy.size());
    for (int step = 0; step < static_cast<int>(greedy.size()); ++step) {
      auto row = mx::slice(logits, {step, 0}, {step + 1, logits.shape(1)});
      auto expected = mx::astype(
          mx::squeeze(mx::subtract(row, mx::logsumexp(row, /*keepdims=*/true)), 0), mx::float32);
      EXPECT_EQ(testing::compare_exact(trace.logprobs[step], expected), "") << "step " << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StockSchedulerParity,
                         ::testing::ValuesIn(testing::model_golden_cases()));

// Two clients alternate two-turn conversations on one scheduler: each
// second turn starts from its own first turn's cache, whatever the other
// client did in between, and answers exactly as a cold run of the same
// prompt does.
TEST(PrefixCache, TwoAlternatingClientsBothKeepTheirConversation) {
  for (const char* name : {"llama_q4", "gemma3_text_bf16"}) {
    SCOPED_TRACE(name);
    auto golden = GoldenCase::load(name);
    auto runtime = tiny_runtime(golden, KernelMode::fast);
    SchedulerOptions options;
    options.prompt_cache_bytes = std::size_t(1) << 30;
    Scheduler scheduler(*runtime, options);
    auto turn = [&](const std::vector<int>& prompt) {
      ScriptedRequest scripted;
      scripted.request.prompt_ids = prompt;
      scripted.request.options.max_tokens = 6;
      return testing::run_scripted(*runtime, options, {scripted}, &scheduler).front();
    };
    const auto first_a = prompt_of(1, 12), first_b = prompt_of(2, 9);
    auto a1 = turn(first_a);
    auto b1 = turn(first_b);
    EXPECT_EQ(a1.result.cached_prompt_tokens, 0);
    EXPECT_EQ(b1.result.cached_prompt_tokens, 0);
    auto second = [](const std::vector<int>& first, const testing::RequestTrace& answer, int tail) {
      auto prompt = first;
      prompt.insert(prompt.end(), answer.result.completion_ids.begin(),
                    answer.result.completion_ids.end());
      for (int i = 0; i < tail; ++i) prompt.push_back((7 * i + 3) % 512);
      return prompt;
    };
    const auto second_a = second(first_a, a1, 5), second_b = second(first_b, b1, 4);
    auto a2 = turn(second_a);
    auto b2 = turn(second_b);
    // The whole first turn, prompt and answer, is reused. gemma3's sliding
    // window cannot be trimmed: its snapshot at the first prompt's boundary
    // (all but the prompt's last token) serves when the whole answer no
    // longer fits the window.
    const int a_cached = a2.result.cached_prompt_tokens, b_cached = b2.result.cached_prompt_tokens;
    EXPECT_EQ(a_cached, static_cast<int>(first_a.size() + a1.result.completion_ids.size()));
    EXPECT_EQ(b_cached, static_cast<int>(first_b.size() + b1.result.completion_ids.size()));
    EXPECT_EQ(a2.result.stats.prompt_tokens, static_cast<int>(second_a.size()) - a_cached);

    SchedulerOptions cold = options;
    cold.prompt_cache_bytes = 0;
    for (const auto& [cached, prompt] : {std::pair{&a2, &second_a}, std::pair{&b2, &second_b}}) {
      ScriptedRequest scripted;
      scripted.request.prompt_ids = *prompt;
      scripted.request.options.max_tokens = 6;
      auto fresh = testing::run_scripted(*runtime, cold, {scripted}).front();
      EXPECT_EQ(fresh.result.cached_prompt_tokens, 0);
      EXPECT_EQ(cached->result.completion_ids, fresh.result.completion_ids);
    }
    EXPECT_GE(scheduler.prefix_cache().entries(), 2u);
  }
}

// Cancelling a sequence mid-prefill frees its row at the next step: the
// others go on, and a cancelled prompt leaves nothing half-written.
TEST(Scheduler, CancelDuringPrefillFreesTheRow) {
  auto golden = GoldenCase::load("llama_bf16");
  auto runtime = tiny_runtime(golden, KernelMode::fast);
  SchedulerOptions options;
  options.prefill_chunk = 4;
  options.prompt_cache_bytes = std::size_t(1) << 30;
  Scheduler scheduler(*runtime, options);
  TextRequest long_prompt, short_prompt;
  long_prompt.prompt_ids = prompt_of(3, 40);
  long_prompt.options.max_tokens = 5;
  short_prompt.prompt_ids = prompt_of(4, 5);
  short_prompt.options.max_tokens = 5;
  std::string long_finish, short_finish;
  auto sink = [](std::string& finish) {
    SequenceSink sink;
    sink.on_chunk = [](const TextChunk&) { return true; };
    sink.on_finish = [&finish](TextResult result) { finish = result.finish_reason; };
    sink.on_error = [](std::exception_ptr error) { std::rethrow_exception(error); };
    return sink;
  };
  auto long_id = scheduler.submit(long_prompt, sink(long_finish));
  scheduler.submit(short_prompt, sink(short_finish));
  scheduler.step();
  scheduler.step();
  ASSERT_EQ(scheduler.counts().prefilling, 1);  // the long prompt, 8 of 39 tokens in
  scheduler.cancel(long_id);
  scheduler.step();
  EXPECT_EQ(long_finish, "cancelled");
  EXPECT_EQ(scheduler.counts().prefilling, 0);
  while (scheduler.has_work()) scheduler.step();
  EXPECT_EQ(short_finish, "length");
  EXPECT_EQ(scheduler.counts().kv_bytes, 0u);
}

// Bad requests are refused at submit with a message, and nothing is queued.
TEST(Scheduler, RefusesBadRequests) {
  auto golden = GoldenCase::load("llama_bf16");
  auto runtime = tiny_runtime(golden, KernelMode::fast);
  Scheduler scheduler(*runtime, {});
  auto refused = [&](TextRequest request, const std::string& words) {
    try {
      scheduler.submit(request, {});
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
      return;
    }
    ADD_FAILURE() << "accepted a request that should fail with: " << words;
  };
  TextRequest empty;
  refused(empty, "empty");
  TextRequest outside;
  outside.prompt_ids = {1, 512};
  refused(outside, "outside the vocabulary");
  TextRequest negative;
  negative.prompt_ids = {1, 2};
  negative.options.max_tokens = -1;
  refused(negative, "max_tokens");
  TextRequest too_long;
  too_long.prompt_ids.assign(4096, 1);
  refused(too_long, "context size");
  EXPECT_FALSE(scheduler.has_work());
}

// The memory budget: a model that cannot hold one full-context sequence
// is refused with both sizes; max_tokens is capped to what fits; a prompt
// that cannot generate one token is refused; and a second sequence waits
// while the first holds the memory, then runs.
TEST(MemoryAdmission, CapsRefusesAndQueues) {
  auto golden = GoldenCase::load("llama_bf16");
  auto runtime = tiny_runtime(golden, KernelMode::fast);
  const MemoryAdmission sizes(runtime->model(), std::size_t(1) << 40, 512);
  const std::size_t weights = sizes.weight_bytes(), step = sizes.sequence_bytes(256);
  ASSERT_GT(weights, 0u);
  ASSERT_GT(step, 0u);
  EXPECT_EQ(sizes.sequence_bytes(257), 2 * step);  // caches grow in 256-token steps

  try {
    MemoryAdmission tight(runtime->model(), weights + step, 4096);
    ADD_FAILURE() << "a 4096-token context fit in one 256-token step";
  } catch (const MemoryAdmissionError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("weights"), std::string::npos) << message;
    EXPECT_NE(message.find("4096-token context"), std::string::npos) << message;
  }

  SchedulerOptions options;
  options.memory_budget = weights + 2 * step;  // room for one 512-token sequence
  auto small = ModelRuntime::for_token_ids(load_model(golden.model_directory, {KernelMode::fast}),
                                           {512, KernelMode::fast});
  Scheduler scheduler(*small, options);
  TextRequest capped;
  capped.prompt_ids = prompt_of(5, 300);
  capped.options.max_tokens = 1000;
  scheduler.validate(capped);
  EXPECT_EQ(capped.options.max_tokens, 212);  // 300 + 212 = 512 tokens: two steps

  TextRequest first, second;
  first.prompt_ids = prompt_of(6, 10);
  first.options.max_tokens = 400;  // reserves two steps: all the room
  second.prompt_ids = prompt_of(7, 10);
  second.options.max_tokens = 4;
  std::vector<std::string> order;
  auto sink = [&order](const std::string& name) {
    SequenceSink sink;
    sink.on_chunk = [](const TextChunk&) { return true; };
    sink.on_finish = [&order, name](TextResult) { order.push_back(name); };
    sink.on_error = [](std::exception_ptr error) { std::rethrow_exception(error); };
    return sink;
  };
  scheduler.submit(first, sink("first"));
  scheduler.submit(second, sink("second"));
  scheduler.step();
  EXPECT_EQ(scheduler.counts().waiting, 1);  // the second waits for the memory
  EXPECT_EQ(scheduler.counts().kv_reserved_bytes, 2 * step);
  while (scheduler.has_work()) scheduler.step();
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(scheduler.counts().kv_reserved_bytes, 0u);

  // The start-up check keeps every prompt the context admits within the
  // budget; a prompt beyond it (a larger context) is refused.
  const MemoryAdmission one_step(runtime->model(), weights + step, 256);
  EXPECT_EQ(one_step.fit_max_tokens(200, 100), 56);
  try {
    one_step.fit_max_tokens(256, 10);  // 257 tokens need a second step
    ADD_FAILURE() << "a prompt without room for one token was accepted";
  } catch (const MemoryAdmissionError& error) {
    EXPECT_NE(std::string(error.what()).find("256 tokens"), std::string::npos) << error.what();
  }
}

// Memory held beside the weights (mounted adapters): it comes out of the
// caches' room; it is refused, changing nothing, when it would leave no room
// for one full-context sequence or for what running sequences reserved.
TEST(MemoryAdmission, ResidentBytesComeOutOfTheCachesRoom) {
  auto golden = GoldenCase::load("llama_bf16");
  auto runtime = tiny_runtime(golden, KernelMode::fast);
  const MemoryAdmission sizes(runtime->model(), std::size_t(1) << 40, 512);
  const std::size_t weights = sizes.weight_bytes(), step = sizes.sequence_bytes(256);

  MemoryAdmission admission(runtime->model(), weights + 3 * step, 256);
  admission.set_resident_bytes(2 * step);
  EXPECT_EQ(admission.cache_room(), step);
  try {
    admission.set_resident_bytes(2 * step + 1);
    ADD_FAILURE() << "resident bytes crowded out the one full-context sequence";
  } catch (const MemoryAdmissionError& error) {
    EXPECT_NE(std::string(error.what()).find("256-token context"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(admission.resident_bytes(), 2 * step);

  SchedulerOptions options;
  options.memory_budget = weights + 4 * step;
  auto small = ModelRuntime::for_token_ids(load_model(golden.model_directory, {KernelMode::fast}),
                                           {512, KernelMode::fast});
  Scheduler scheduler(*small, options);
  scheduler.set_resident_bytes(2 * step);
  EXPECT_EQ(scheduler.counts().resident_bytes, 2 * step);
  TextRequest capped;
  capped.prompt_ids = prompt_of(5, 300);
  capped.options.max_tokens = 1000;
  scheduler.validate(capped);
  EXPECT_EQ(capped.options.max_tokens, 212);  // the two steps left hold 512 tokens

  // Three sequences of one step each run at once when nothing is resident.
  scheduler.set_resident_bytes(0);
  auto quiet = [] {
    SequenceSink sink;
    sink.on_chunk = [](const TextChunk&) { return true; };
    sink.on_finish = [](TextResult) {};
    sink.on_error = [](std::exception_ptr error) { std::rethrow_exception(error); };
    return sink;
  };
  for (int i = 0; i < 3; ++i) {
    TextRequest request;
    request.prompt_ids = prompt_of(20 + i, 10);
    request.options.max_tokens = 100;
    scheduler.submit(request, quiet());
  }
  scheduler.step();
  ASSERT_EQ(scheduler.counts().kv_reserved_bytes, 3 * step);
  try {
    scheduler.set_resident_bytes(2 * step);  // fits the context, not the three
    ADD_FAILURE() << "resident bytes were set over the running sequences' reservations";
  } catch (const MemoryAdmissionError& error) {
    EXPECT_NE(std::string(error.what()).find("reserved"), std::string::npos) << error.what();
  }
  EXPECT_EQ(scheduler.counts().resident_bytes, 0u);
  scheduler.set_resident_bytes(step);
  while (scheduler.has_work()) scheduler.step();
  scheduler.set_resident_bytes(2 * step);  // fits once they are done
  EXPECT_EQ(scheduler.counts().resident_bytes, 2 * step);
}

}  // namespace
}  // namespace mlx_cpp
