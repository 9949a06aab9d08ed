#include "engine/speculative/speculative_step.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

bool trimmable_after(const CacheList& caches, int tokens) {
  return std::all_of(caches.begin(), caches.end(),
                     [tokens](const auto& cache) { return cache->trimmable_after(tokens); });
}

// Logits [L, vocab] of `tokens` fed after the caches. `stepwise`: every
// position as its own decode step computes it.
mx::array forward_tokens(const LanguageModel& model, const std::vector<int>& tokens,
                         CacheList& caches, bool stepwise, const AdapterStack* adapters) {
  const int length = static_cast<int>(tokens.size());
  mx::array logits = mx::array(0.0f);
  if (stepwise) {
    ForwardBatch batch;
    batch.consecutive_positions = true;
    batch.rows.assign(length, BatchRow{&caches, std::nullopt, adapters});
    logits = model.forward_batch(mx::array(tokens.data(), {length, 1}, mx::int32), batch);
  } else {
    logits = model.forward(mx::array(tokens.data(), {1, length}, mx::int32), caches, adapters);
  }
  return mx::reshape(logits, {length, logits.shape(2)});
}

mx::array row_of(const mx::array& rows, int i) {
  return mx::slice(rows, {i, 0}, {i + 1, rows.shape(1)});
}

// How many drafts the target accepts, and the token it adds after them.
struct Verdict {
  int accepted = 0;
  int next = 0;
};

Verdict judge_greedy(const std::vector<mx::array>& logprobs, const std::vector<int>& drafts,
                     Sampler& sampler) {
  std::vector<mx::array> choices;
  for (const auto& row : logprobs) choices.push_back(sampler(row));
  mx::eval(choices);
  Verdict verdict;
  while (verdict.accepted < static_cast<int>(drafts.size()) &&
         choices[verdict.accepted].item<int>() == drafts[verdict.accepted])
    ++verdict.accepted;
  verdict.next = choices[verdict.accepted].item<int>();
  return verdict;
}

Verdict judge_sampled(const std::vector<mx::array>& logprobs, const std::vector<int>& drafts,
                      Sampler& sampler) {
  Verdict verdict;
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    auto weights = sampler.draw_weights(logprobs[i]);  // [1, vocab]
    auto draft = mx::array(drafts[i]);
    auto p_draft = mx::take(mx::softmax(mx::astype(weights, mx::float32), -1, true), draft, -1);
    auto u = sampler.uniform();
    mx::eval({p_draft, u});
    if (u.item<float>() < p_draft.item<float>()) {
      ++verdict.accepted;
      continue;
    }
    // The residual max(0, p - q) with q a point mass on the draft: p
    // without the draft, renormalized (categorical normalizes).
    auto vocab = mx::arange(weights.shape(1), mx::int32);
    auto without =
        mx::where(mx::equal(vocab, draft),
                  mx::array(-std::numeric_limits<float>::infinity(), weights.dtype()), weights);
    auto token = sampler.draw(without);
    mx::eval(token);
    verdict.next = token.item<int>();
    return verdict;
  }
  auto token = sampler.draw(sampler.draw_weights(logprobs.back()));
  mx::eval(token);
  verdict.next = token.item<int>();
  return verdict;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

DraftedStep draft_step(const ModelRuntime& runtime, Sequence& sequence, DraftSchedule* schedule,
                       bool drafting_granted) {
  const auto& options = sequence.request().options;
  DraftedStep step;
  step.sequence = &sequence;
  step.schedule = schedule;
  const int input = sequence.speculative_input();
  step.context = sequence.history();
  step.context.push_back(input);
  const int left = options.max_tokens - sequence.generated_tokens();
  const int limit = std::max(0, std::min(options.speculative.draft_tokens, left));
  // Prompt lookup costs nothing to ask; a draft model is asked only when
  // its drafts are likely to pay, and always at the first step, which
  // reads the prompt into it before the first token (an exploring draft
  // later catches up with only the tokens since, not a whole prompt in
  // the middle of the stream).
  const bool costly = options.speculative.kind == DraftKind::draft_model;
  const bool first_step = sequence.generated_tokens() == 0;
  if (limit > 0 &&
      (!schedule || !costly || first_step || drafting_granted || schedule->worth_drafting(limit))) {
    DraftMore more;
    if (schedule)
      more = [schedule, limit](const std::vector<float>& c) {
        return schedule->worth_another(c, limit);
      };
    step.draft = sequence.draft_source()->propose(step.context, limit, more);
  }
  step.drafted = static_cast<int>(step.draft.tokens.size());
  if (schedule) {
    const int chosen = schedule->choose(step.draft.confidence);
    step.draft.tokens.resize(chosen);
    step.draft.confidence.resize(chosen);
  }
  step.fed.push_back(input);
  step.fed.insert(step.fed.end(), step.draft.tokens.begin(), step.draft.tokens.end());
  auto& caches = sequence.caches();
  const bool trimmable = trimmable_after(caches, static_cast<int>(step.fed.size()));
  if (!trimmable) step.snapshot = clone_cache_list(caches);
  // The fast path (and caches that must be snapshotted) verify position by
  // position; the stock path as mlx-lm does. One token alone is a plain
  // step (on the fast path the fused one, with the same logits).
  step.stepwise = (runtime.kernels() == KernelMode::fast || !trimmable) && step.fed.size() > 1;
  return step;
}

mx::array verify_forward(const ModelRuntime& runtime, DraftedStep& step) {
  auto& sequence = *step.sequence;
  const auto& options = sequence.request().options;
  auto logits = forward_tokens(runtime.model(), step.fed, sequence.caches(), step.stepwise,
                               options.adapters.get());
  apply_kv_cache_scheme(sequence.caches(), options.kv_cache);
  return logits;
}

std::vector<mx::array> verify_forward_together(const ModelRuntime& runtime,
                                               const std::vector<DraftedStep*>& steps) {
  ForwardBatch batch;
  batch.consecutive_positions = true;
  std::vector<int> tokens;
  for (const auto* step : steps) {
    if (!step->stepwise) throw std::logic_error("verified together: stepwise verifies only");
    auto& sequence = *step->sequence;
    for (int token : step->fed) {
      tokens.push_back(token);
      batch.rows.push_back(
          BatchRow{&sequence.caches(), std::nullopt, sequence.request().options.adapters.get()});
    }
  }
  const int rows = static_cast<int>(tokens.size());
  auto logits =
      runtime.model().forward_batch(mx::array(tokens.data(), {rows, 1}, mx::int32), batch);
  logits = mx::reshape(logits, {rows, logits.shape(2)});
  std::vector<mx::array> per_step;
  int at = 0;
  for (const auto* step : steps) {
    auto& sequence = *step->sequence;
    apply_kv_cache_scheme(sequence.caches(), sequence.request().options.kv_cache);
    const int length = static_cast<int>(step->fed.size());
    per_step.push_back(mx::slice(logits, {at, 0}, {at + length, logits.shape(1)}));
    at += length;
  }
  return per_step;
}

SpeculativeStepOutcome finish_step(const ModelRuntime& runtime, DraftedStep& step,
                                   const mx::array& logits, double forward_seconds) {
  const auto judge_start = std::chrono::steady_clock::now();
  auto& sequence = *step.sequence;
  const auto& options = sequence.request().options;
  const auto& drafts = step.draft.tokens;
  const int proposed = static_cast<int>(drafts.size());
  auto& context = step.context;
  std::vector<mx::array> logprobs;
  for (int i = 0; i <= proposed; ++i) {
    auto row = row_of(logits, i);
    if (sequence.penalized()) {
      // Position i's logits follow every token up to fed[i].
      if (i > 0) context.push_back(drafts[i - 1]);
      row = apply_logits_processors(row, context, options.penalties);
    }
    logprobs.push_back(step_logprobs(row, options.kernels));
  }
  auto& sampler = sequence.sampler();
  const auto verdict = sampler.greedy() ? judge_greedy(logprobs, drafts, sampler)
                                        : judge_sampled(logprobs, drafts, sampler);
  const int accepted = verdict.accepted;
  if (auto* schedule = step.schedule) {
    // A plain step here waits for its token; the sequence's plain steps
    // that follow in the batched decode are timed there instead.
    const double verify_seconds = forward_seconds + seconds_since(judge_start);
    schedule->record_cost(static_cast<int>(step.fed.size()), proposed > 0 ? verify_seconds : -1.0,
                          step.drafted, step.draft.first_seconds, step.draft.later_seconds);
    schedule->record_outcome(step.draft.confidence, accepted);
  }

  auto& caches = sequence.caches();
  if (accepted < proposed) {
    if (step.snapshot) {
      caches = std::move(*step.snapshot);
      forward_tokens(runtime.model(), {step.fed.begin(), step.fed.begin() + 1 + accepted}, caches,
                     true, options.adapters.get());
      apply_kv_cache_scheme(caches, options.kv_cache);
      evaluate_cache_state(caches);
    } else {
      for (auto& cache : caches) cache->trim(proposed - accepted);
    }
  }
  sequence.count_drafts(proposed, accepted);
  sequence.speculative_input_fed();
  for (int j = 0; j < accepted; ++j) {
    if (!sequence.deliver_token(drafts[j], mx::squeeze(logprobs[j], 0), /*fed=*/true)) {
      // Finished inside the accepted run: the caches keep what was delivered.
      for (auto& cache : caches) cache->trim(accepted - 1 - j);
      return {false, proposed};
    }
  }
  return {sequence.deliver_token(verdict.next, mx::squeeze(logprobs[accepted], 0), /*fed=*/false),
          proposed};
}

SpeculativeStepOutcome speculative_step(const ModelRuntime& runtime, Sequence& sequence,
                                        DraftSchedule* schedule, bool drafting_granted) {
  auto step = draft_step(runtime, sequence, schedule, drafting_granted);
  const auto verify_start = std::chrono::steady_clock::now();
  auto logits = verify_forward(runtime, step);
  mx::eval(logits);
  return finish_step(runtime, step, logits, seconds_since(verify_start));
}

}  // namespace mlx_cpp
