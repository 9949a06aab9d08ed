#pragma once
// One request as data the scheduler steps: its prompt and generated ids,
// its caches, sampler and logits processors, stop matcher and
// detokenizer, and where it stands (waiting → prefilling → decoding →
// finished or cancelled).
#include <mlx/array.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runtime.h"
#include "engine/speculative/draft_source.h"
#include "engine/stop_matcher.h"
#include "engine/text_request.h"
#include "grammar/token_grammar.h"
#include "model/sampler.h"

namespace mlx_cpp {

using SequenceId = std::uint64_t;

enum class SequenceState { waiting, prefilling, decoding, finished, cancelled };

// Where a sequence's output goes. on_chunk returning false cancels it; one
// of on_finish or on_error is called exactly once, last.
struct SequenceSink {
  std::function<bool(const TextChunk&)> on_chunk;
  std::function<void(TextResult)> on_finish;
  std::function<void(std::exception_ptr)> on_error;
  // Optional: each delivered token's log-probabilities [vocab] (the row
  // the sampler drew from), for tests that compare paths step by step.
  std::function<void(const mlx::core::array&)> observe_logprobs;
};

class Sequence {
 public:
  using Clock = std::chrono::steady_clock;

  // The request must have passed Scheduler::validate.
  Sequence(SequenceId id, const ModelRuntime& runtime, TextRequest request, SequenceSink sink);

  SequenceId id() const { return id_; }
  SequenceState state() const { return state_; }
  const TextRequest& request() const { return request_; }
  const std::vector<int>& prompt() const { return request_.prompt_ids; }
  CacheList& caches() { return caches_; }
  const CacheList& caches() const { return caches_; }

  // Starts prefilling on caches that already hold the prompt's first
  // `cached` tokens (fresh caches when cached is 0).
  void start(CacheList caches, int cached);
  int cached_prompt_tokens() const { return cached_prompt_tokens_; }
  // Memory held for this sequence's caches while it runs (the scheduler's).
  std::size_t reserved_bytes = 0;
  // Prompt tokens in the caches; the last prompt token is never prefilled:
  // its forward is the first decode step.
  int prefilled() const { return prefilled_; }
  int prompt_tokens_left_to_prefill() const;
  // The next chunk of at most `limit` prompt tokens to prefill; marks them
  // as in the caches.
  std::vector<int> take_prefill_chunk(int limit);

  // Tokens so far (history for penalties), prompt included.
  const std::vector<int>& history() const { return history_; }
  // The step's logits of this row [1, vocab] → (token [1], logprobs [vocab]),
  // both lazy; the sampler and processors are this sequence's own.
  std::pair<mlx::core::array, mlx::core::array> sample(const mlx::core::array& logits);
  // The token the next decode step feeds (sampled, maybe not yet computed).
  const mlx::core::array& next_input() const { return *pending_token_; }
  bool penalized() const { return request_.options.penalties.any(); }
  bool constrained() const { return constraint_.has_value(); }
  // Records the freshly sampled token of the step just scheduled, and
  // returns the one before it, which this step fed to the model (nullopt
  // on the first step: the prompt's last token was fed).
  void schedule(std::pair<mlx::core::array, mlx::core::array> sampled);
  // Reads the token fed by the latest step and hands it to the sink;
  // returns false when the sequence has finished (EOS, max_tokens, stop
  // string, or the sink cancelled).
  bool deliver_fed_token();
  // First decode step scheduled: the prompt is consumed.
  void begin_decoding();
  bool has_fed_token() const { return fed_token_.has_value(); }

  // Speculative decoding (engine/speculative/speculative_step.h). A
  // sequence with a draft source takes speculative steps instead of the
  // batched decode; they feed tokens themselves and deliver what the
  // verify accepted.
  DraftSource* draft_source() { return draft_source_.get(); }
  void set_draft_source(std::unique_ptr<DraftSource> source) { draft_source_ = std::move(source); }
  // The token the next speculative step feeds first: the prompt's last
  // on the first step, then the last token delivered. history() holds
  // every token before it.
  int speculative_input() const;
  // The step fed the speculative input to the model (the first step's
  // begins decoding).
  void speculative_input_fed();
  // Hands a token that a speculative step chose to the sink, with the
  // log-probabilities it was drawn from; returns false when the sequence
  // has finished. `fed`: the caches hold it (an accepted draft); else it
  // becomes the next speculative input.
  bool deliver_token(int id, const mlx::core::array& logprobs, bool fed);
  // Between speculative steps that verify no drafts, a speculating
  // sequence decodes plainly in the batched (pipelined) decode. Entering:
  // the speculative input becomes the next decode step's input (delivered
  // already, so that step hands nothing to the sink). Leaving: waits for
  // the token the latest decode step sampled and delivers it as the next
  // speculative input; false when the sequence has finished.
  void enter_plain_decoding();
  bool leave_plain_decoding();
  // When the latest plain decode step of a speculating sequence ended
  // (the scheduler's: it times plain steps for the draft schedule).
  std::optional<Clock::time_point> plain_step_end;
  int generated_tokens() const { return result_.stats.generated_tokens; }
  // One speculative step: tokens proposed by the draft source and
  // accepted (steps that proposed nothing count no verify).
  void count_drafts(int proposed, int accepted);
  Sampler& sampler() { return sampler_; }

  void cancel() { cancel_requested_ = true; }
  bool cancel_requested() const { return cancel_requested_; }
  // Ends the sequence: flushes text, calls on_finish. Returns the tokens
  // whose keys and values the caches hold (prompt + every fed token).
  std::vector<int> finish();
  void fail(std::exception_ptr error);

 private:
  bool emit(TextChunk& chunk);
  // Hands one token to the sink (EOS, stop strings, max_tokens); false
  // when the sequence has finished.
  bool deliver(int id, const mlx::core::array& logprobs);

  SequenceId id_;
  const ModelRuntime& runtime_;
  TextRequest request_;
  SequenceSink sink_;
  SequenceState state_ = SequenceState::waiting;
  CacheList caches_;
  int cached_prompt_tokens_ = 0;
  int prefilled_ = 0;
  std::vector<int> history_;
  Sampler sampler_;
  StopMatcher stops_;
  std::optional<StreamingDetokenizer> detokenizer_;     // none without a tokenizer
  std::optional<grammar::TokenConstraint> constraint_;  // when the request has a grammar
  std::optional<ThinkingTracker> thinking_;             // when the request limits its thinking
  // Tokens the engine writes in place of sampled ones (the closing markup
  // of a think block whose budget is spent), first in front.
  std::vector<int> forced_;
  mlx::core::array force_next(const mlx::core::array& sampled);
  // The budget is spent: the block's closing markup comes next.
  void close_think_block() { forced_ = runtime_.encode(request_.thinking.markup.close, false); }
  // The sampled token the next step feeds, and the one the latest step fed.
  std::optional<mlx::core::array> pending_token_, pending_logprobs_;
  std::optional<mlx::core::array> fed_token_, fed_logprobs_;
  // The sink has the token already (a speculative step delivered it).
  bool pending_delivered_ = false, fed_delivered_ = false;
  std::unique_ptr<DraftSource> draft_source_;
  std::optional<int> speculative_input_;  // delivered, not yet fed
  TextResult result_;
  FinishReason finish_reason_ = FinishReason::none;
  bool cancel_requested_ = false;
  bool sink_cancelled_ = false;
  Clock::time_point arrival_, first_token_time_;
};

}  // namespace mlx_cpp
