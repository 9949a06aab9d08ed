#include "engine/sequence.h"

#include <mlx/memory.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <stdexcept>

#include "engine/cached_prompt.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

std::vector<TokenLogprob> top_alternatives(const ModelRuntime& runtime, const mx::array& logprobs,
                                           int count) {
  const int vocab = logprobs.shape(0);
  count = std::min(count, vocab);
  auto order =
      mx::slice(mx::argsort(mx::negative(mx::astype(logprobs, mx::float32))), {0}, {count});
  auto values = mx::astype(mx::take(logprobs, order), mx::float32);
  mx::eval({order, values});
  std::vector<TokenLogprob> result;
  for (int i = 0; i < count; ++i) {
    int id = order.data<uint32_t>()[i];
    result.push_back({id, runtime.decode({id}), values.data<float>()[i]});
  }
  return result;
}

float logprob_of(const mx::array& logprobs, int id) {
  return mx::astype(mx::take(logprobs, mx::array(id)), mx::float32).item<float>();
}

double seconds_between(Sequence::Clock::time_point from, Sequence::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

Sequence::Sequence(SequenceId id, const ModelRuntime& runtime, TextRequest request,
                   SequenceSink sink)
    : id_(id),
      runtime_(runtime),
      request_(std::move(request)),
      sink_(std::move(sink)),
      sampler_(request_.options.sampler),
      stops_(request_.stop),
      arrival_(Clock::now()) {
  if (runtime.has_tokenizer())
    detokenizer_.emplace(runtime.tokenizer(), runtime.kept_special_tokens());
  if (request_.grammar) constraint_.emplace(request_.grammar);
  if (request_.thinking.enabled() && detokenizer_ && !constraint_) {
    thinking_.emplace(request_.thinking);
    if (thinking_->spent_at_start()) close_think_block();
  }
}

mx::array Sequence::force_next(const mx::array& sampled) {
  const int id = forced_.front();
  forced_.erase(forced_.begin());
  return mx::reshape(mx::astype(mx::array(id), sampled.dtype()), sampled.shape());
}

void Sequence::start(CacheList caches, int cached) {
  caches_ = std::move(caches);
  cached_prompt_tokens_ = cached;
  prefilled_ = cached;
  result_.cached_prompt_tokens =
      cached + (request_.cached_prompt ? request_.cached_prompt->tokens : 0);
  history_.assign(request_.prompt_ids.begin(), request_.prompt_ids.begin() + cached);
  state_ = SequenceState::prefilling;
}

int Sequence::prompt_tokens_left_to_prefill() const {
  return static_cast<int>(request_.prompt_ids.size()) - 1 - prefilled_;
}

std::vector<int> Sequence::take_prefill_chunk(int limit) {
  const int count = std::min(limit, prompt_tokens_left_to_prefill());
  std::vector<int> chunk(request_.prompt_ids.begin() + prefilled_,
                         request_.prompt_ids.begin() + prefilled_ + count);
  prefilled_ += count;
  history_.insert(history_.end(), chunk.begin(), chunk.end());
  return chunk;
}

void Sequence::begin_decoding() {
  history_.push_back(request_.prompt_ids.back());
  prefilled_ = static_cast<int>(request_.prompt_ids.size());
  state_ = SequenceState::decoding;
}

std::pair<mx::array, mx::array> Sequence::sample(const mx::array& logits) {
  auto processed = logits;
  // The token this step feeds is history for the logits it produces (and
  // moves the grammar on); reading it waits for the step before.
  std::optional<int> fed;
  if (pending_token_ && (penalized() || constrained())) fed = pending_token_->item<int>();
  if (penalized()) {
    if (fed) history_.push_back(*fed);
    processed = apply_logits_processors(processed, history_, request_.options.penalties);
  }
  if (constrained()) {
    if (fed) constraint_->accept(*fed);
    // Past an accepted stop token the pipelined step after it is never
    // delivered: nothing to mask.
    if (!constraint_->finished())
      processed = grammar::mask_logits(processed, constraint_->allowed());
  }
  auto logprobs = step_logprobs(processed, request_.options.kernels);
  auto token = sampler_(logprobs);
  if (!forced_.empty()) token = force_next(token);
  return {token, mx::squeeze(logprobs, 0)};
}

void Sequence::schedule(std::pair<mx::array, mx::array> sampled) {
  fed_token_ = pending_token_;
  fed_logprobs_ = pending_logprobs_;
  fed_delivered_ = pending_delivered_;
  pending_delivered_ = false;
  pending_token_ = std::move(sampled.first);
  pending_logprobs_ = std::move(sampled.second);
}

bool Sequence::emit(TextChunk& chunk) {
  result_.text += chunk.text;
  if (!sink_.on_chunk(chunk)) sink_cancelled_ = true;
  return !sink_cancelled_;
}

bool Sequence::deliver_fed_token() {
  if (!fed_token_) return true;
  if (result_.stats.fed_ids.empty()) mx::eval({*fed_token_});
  const int id = fed_token_->item<int>();
  result_.stats.fed_ids.push_back(id);
  // A draft source reads the whole history; sample() has added the token
  // already where penalties read it.
  if (draft_source_ && !penalized()) history_.push_back(id);
  if (fed_delivered_) return true;
  return deliver(id, *fed_logprobs_);
}

bool Sequence::deliver(int id, const mx::array& logprobs) {
  auto& stats = result_.stats;
  if (first_token_time_ == Clock::time_point{}) {
    first_token_time_ = Clock::now();
    stats.prompt_seconds = seconds_between(arrival_, first_token_time_);
  }
  const auto& eos = runtime_.eos_token_ids();
  if (!request_.ignore_eos && std::find(eos.begin(), eos.end(), id) != eos.end()) {
    finish_reason_ = FinishReason::stop;
    return false;
  }
  stats.generated_tokens++;
  result_.completion_ids.push_back(id);
  if (sink_.observe_logprobs) sink_.observe_logprobs(logprobs);
  TextChunk chunk;
  const std::string text = detokenizer_ ? detokenizer_->add(id) : std::string();
  if (thinking_ && thinking_->add_token(text)) {
    // The budget is spent: the token already sampled after this one gives
    // way to the closing markup, and the model goes on after it.
    close_think_block();
    if (pending_token_ && !forced_.empty()) pending_token_ = force_next(*pending_token_);
  }
  chunk.text = stops_.add(text);
  if (request_.logprobs || request_.top_logprobs > 0)
    chunk.tokens.push_back({id, runtime_.decode({id}), logprob_of(logprobs, id)});
  if (request_.top_logprobs > 0)
    chunk.alternatives.push_back(top_alternatives(runtime_, logprobs, request_.top_logprobs));
  if (!emit(chunk) || stops_.matched()) {
    finish_reason_ = FinishReason::cancelled;
    return false;
  }
  if (stats.generated_tokens >= request_.options.max_tokens) {
    finish_reason_ = FinishReason::length;
    return false;
  }
  return true;
}

int Sequence::speculative_input() const {
  return speculative_input_ ? *speculative_input_ : request_.prompt_ids.back();
}

void Sequence::speculative_input_fed() {
  if (!speculative_input_) {  // the first step feeds the prompt's last token
    begin_decoding();
    return;
  }
  history_.push_back(*speculative_input_);
  result_.stats.fed_ids.push_back(*speculative_input_);
  speculative_input_.reset();
}

bool Sequence::deliver_token(int id, const mx::array& logprobs, bool fed) {
  if (fed) {
    history_.push_back(id);
    result_.stats.fed_ids.push_back(id);
  }
  const bool goes_on = deliver(id, logprobs);
  if (!fed) speculative_input_ = id;
  return goes_on;
}

void Sequence::enter_plain_decoding() {
  if (!speculative_input_)
    throw std::logic_error("plain decoding entered before a speculative step");
  pending_token_ = mx::array({*speculative_input_}, mx::int32);
  pending_logprobs_.reset();
  pending_delivered_ = true;
  speculative_input_.reset();
}

bool Sequence::leave_plain_decoding() {
  const auto token = *pending_token_;
  const auto logprobs = *pending_logprobs_;
  pending_token_.reset();
  pending_logprobs_.reset();
  fed_token_.reset();
  fed_logprobs_.reset();
  const int id = token.item<int>();
  speculative_input_ = id;
  return deliver(id, logprobs);
}

void Sequence::count_drafts(int proposed, int accepted) {
  auto& stats = result_.stats;
  stats.draft_kind = request_.options.speculative.kind;
  stats.draft_proposed += proposed;
  stats.draft_accepted += accepted;
  if (proposed > 0) stats.draft_steps++;
}

std::vector<int> Sequence::finish() {
  auto& stats = result_.stats;
  if (request_.options.max_tokens == 0 && finish_reason_ == FinishReason::none && pending_token_) {
    // Nothing to generate: the prompt's time is its prefill.
    mx::eval({*pending_token_});
    first_token_time_ = Clock::now();
    stats.prompt_seconds = seconds_between(arrival_, first_token_time_);
    finish_reason_ = FinishReason::length;
  }
  const bool cancelled = cancel_requested_ || sink_cancelled_;
  if (!stops_.matched() && !cancelled) {
    TextChunk tail;
    tail.text = stops_.add(detokenizer_ ? detokenizer_->finish() : std::string());
    tail.text += stops_.flush();
    if (!tail.text.empty()) emit(tail);
  }
  stats.prompt_tokens = static_cast<int>(request_.prompt_ids.size()) - cached_prompt_tokens_;
  if (!stats.fed_ids.empty())
    stats.generation_seconds = seconds_between(first_token_time_, Clock::now());
  stats.peak_memory_bytes = mx::get_peak_memory();
  if (stops_.matched() || finish_reason_ == FinishReason::stop) {
    result_.finish_reason = "stop";
    stats.finish_reason = FinishReason::stop;
  } else if (cancelled) {
    result_.finish_reason = "cancelled";
    stats.finish_reason = FinishReason::cancelled;
  } else {
    result_.finish_reason = "length";
    stats.finish_reason = FinishReason::length;
  }
  state_ = cancelled && !stops_.matched() ? SequenceState::cancelled : SequenceState::finished;
  std::vector<int> cached = request_.prompt_ids;
  if (prefilled_ < static_cast<int>(cached.size())) cached.resize(prefilled_);
  cached.insert(cached.end(), stats.fed_ids.begin(), stats.fed_ids.end());
  sink_.on_finish(std::move(result_));
  return cached;
}

void Sequence::fail(std::exception_ptr error) {
  state_ = SequenceState::cancelled;
  sink_.on_error(error);
}

}  // namespace mlx_cpp
