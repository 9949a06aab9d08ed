#include "engine/speculative/draft_model_source.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <tuple>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

DraftModelSource::DraftModelSource(const ModelRuntime& draft, int prefill_chunk)
    : draft_(draft), prefill_chunk_(prefill_chunk), caches_(draft.model().make_caches()) {}

mx::array DraftModelSource::feed(const std::vector<int>& tokens) {
  auto logits = draft_.model().forward(
      mx::array(tokens.data(), {1, static_cast<int>(tokens.size())}, mx::int32), caches_);
  fed_.insert(fed_.end(), tokens.begin(), tokens.end());
  return logits;
}

mx::array DraftModelSource::catch_up(const std::vector<int>& context, int drafts) {
  // Keep what the caches share with the context; drop the rest.
  const auto mismatch = std::mismatch(fed_.begin(), fed_.end(), context.begin(), context.end());
  int keep = static_cast<int>(mismatch.first - fed_.begin());
  if (keep == static_cast<int>(context.size())) --keep;  // the last token must be fed for logits
  const int drop = static_cast<int>(fed_.size()) - keep;
  if (drop > 0) {
    if (all_trimmable(caches_) || snapshot_.empty() || keep < static_cast<int>(snapshot_fed_)) {
      for (auto& cache : caches_) cache->trim(drop);
    } else {
      caches_ = std::move(snapshot_);
      snapshot_.clear();
      keep = static_cast<int>(snapshot_fed_);
    }
    fed_.resize(keep);
  }
  std::vector<int> missing(context.begin() + keep, context.end());
  caught_up_ = missing.size();
  // A long run (the prompt) is prefilled in chunks, its last token alone;
  // the one or two tokens a step brings go in one forward, as mlx-lm's
  // draft step feeds them.
  if (missing.size() > 2 || fed_.empty()) {
    std::size_t start = 0;
    while (missing.size() - start > 1) {
      const std::size_t count = std::min<std::size_t>(prefill_chunk_, missing.size() - start - 1);
      feed({missing.begin() + start, missing.begin() + start + count});
      evaluate_cache_state(caches_);
      start += count;
    }
    missing.erase(missing.begin(), missing.begin() + start);
  }
  auto logits = feed(missing);
  // A clone shares the storage, so the next decode step would copy it:
  // only caches that could not be trimmed after the drafts get one.
  const bool trimmable = std::all_of(caches_.begin(), caches_.end(), [drafts](const auto& cache) {
    return cache->trimmable_after(drafts);
  });
  snapshot_ = trimmable ? CacheList{} : clone_cache_list(caches_);
  snapshot_fed_ = fed_.size();
  return mx::slice(logits, {0, logits.shape(1) - 1, 0}, {1, logits.shape(1), logits.shape(2)});
}

Draft DraftModelSource::propose(const std::vector<int>& context, int limit, const DraftMore& more) {
  Draft draft;
  if (limit <= 0 || context.empty()) return draft;
  const auto start = std::chrono::steady_clock::now();
  const bool had_context = !fed_.empty();
  auto logits = catch_up(context, limit);
  // One or two tokens to catch up with are the step's own (the target's
  // last token, and the last draft after a full acceptance); more are a
  // prefill (the prompt, or the tokens of plain steps).
  const bool steady = had_context && caught_up_ <= 2;
  auto first_drafted = start;
  const int vocab = logits.shape(2);
  auto pick = [&](const mx::array& last_logits) {
    auto logprobs = step_logprobs(mx::reshape(last_logits, {1, vocab}), draft_.kernels());
    return std::pair{mx::astype(mx::argmax(logprobs, -1), mx::int32),
                     mx::exp(mx::astype(mx::max(logprobs), mx::float32))};
  };
  auto [token, probability] = pick(logits);
  for (int i = 0; i < limit; ++i) {
    // The forward of this pick is built and started before the host waits
    // for the pick, as the plain decode loop does, so the draft model does
    // not idle while the host reads a token and builds the next graph. With
    // a schedule, only where it would draft another if this pick were as
    // likely as the last one: a forward started for a draft that is then
    // declined costs the verify a draft's time (its token stays in the
    // caches until the next catch_up trims it). The last proposal is fed
    // only if it is accepted.
    bool ahead = false;
    if (i + 1 < limit) {
      auto guess = draft.confidence;
      guess.push_back(guess.empty() ? 1.0f : guess.back());
      ahead = !more || more(guess);
    }
    std::optional<mx::array> next_logits;
    if (ahead) {
      next_logits = draft_.model().forward(mx::reshape(token, {1, 1}), caches_);
      mx::async_eval({token, probability, *next_logits});
    } else {
      mx::async_eval({token, probability});
    }
    draft.tokens.push_back(token.item<int>());
    draft.confidence.push_back(probability.item<float>());
    if (next_logits) fed_.push_back(draft.tokens.back());
    if (i == 0) first_drafted = std::chrono::steady_clock::now();
    if (i + 1 == limit || (more && !more(draft.confidence))) break;
    if (!next_logits) next_logits = feed({draft.tokens.back()});
    std::tie(token, probability) = pick(*next_logits);
  }
  const auto end = std::chrono::steady_clock::now();
  draft.first_seconds = steady ? std::chrono::duration<double>(first_drafted - start).count() : -1;
  draft.later_seconds = std::chrono::duration<double>(end - first_drafted).count();
  return draft;
}

void check_draft_compatible(const ModelRuntime& target, const ModelRuntime& draft) {
  const int target_vocab = target.model().vocab_size(), draft_vocab = draft.model().vocab_size();
  if (target_vocab != draft_vocab)
    throw Error("the draft model's vocabulary has " + std::to_string(draft_vocab) +
                " entries, the model's " + std::to_string(target_vocab));
  if (target.eos_token_ids() != draft.eos_token_ids())
    throw Error("the draft model's end-of-sequence tokens differ from the model's");
  if (target.has_tokenizer() != draft.has_tokenizer())
    throw Error("one of the model and the draft model has a tokenizer, the other none");
  if (target.has_tokenizer()) {
    const auto& a = target.tokenizer();
    const auto& b = draft.tokenizer();
    if (a.vocab_size() != b.vocab_size())
      throw Error("the draft model's tokenizer has " + std::to_string(b.vocab_size()) +
                  " tokens, the model's " + std::to_string(a.vocab_size()));
    for (TokenId id = 0; id < static_cast<TokenId>(a.vocab_size()); ++id) {
      const auto text_a = a.id_to_token(id), text_b = b.id_to_token(id);
      if (text_a != text_b || a.is_special_token(id) != b.is_special_token(id))
        throw Error(
            "the draft model's token " + std::to_string(id) + " ('" + text_b.value_or("") +
            "') differs from the model's ('" + text_a.value_or("") + "')" +
            (a.is_special_token(id) != b.is_special_token(id) ? " in whether it is special" : ""));
    }
  }
}

}  // namespace mlx_cpp
