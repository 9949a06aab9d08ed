#include "engine/scheduler.h"

#include <mlx/memory.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/cached_prompt.h"
#include "engine/speculative/draft_model_source.h"
#include "engine/speculative/prompt_lookup.h"
#include "engine/speculative/speculative_step.h"
#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// Steps between releases of MLX's buffer cache, as generate_tokens does
// every 256 tokens.
constexpr int kClearCacheSteps = 256;

// Prompt tokens per sequence per step: the option, or the kernels' default.
int prefill_chunk_of(const ModelRuntime& runtime, const SchedulerOptions& options) {
  if (options.prefill_chunk < 0) throw Error("prefill_chunk must be >= 0");
  return options.prefill_chunk > 0 ? options.prefill_chunk
                                   : default_prefill_step(runtime.kernels());
}

std::unique_ptr<SsdCache> make_ssd_cache(const ModelRuntime& runtime,
                                         const SchedulerOptions& options) {
  if (options.ssd_cache_directory.empty()) return nullptr;
  if (options.prompt_cache_bytes == 0)
    throw Error(
        "the SSD cache is a tier under the prefix cache: it needs one (prompt cache bytes)");
  const auto& directory = runtime.loaded().directory;
  return std::make_unique<SsdCache>(
      SsdCacheOptions{options.ssd_cache_directory, options.ssd_cache_bytes,
                      model_identity(directory), std::filesystem::absolute(directory).string()});
}

}  // namespace

Scheduler::Scheduler(const ModelRuntime& runtime, SchedulerOptions options,
                     const ModelRuntime* draft)
    : runtime_(runtime),
      options_(options),
      draft_(draft),
      prefill_chunk_(prefill_chunk_of(runtime, options)),
      admission_(runtime.model(), options.memory_budget, runtime.context_size(), prefill_chunk_),
      ssd_cache_(make_ssd_cache(runtime, options)),
      prefix_cache_(options.prompt_cache_bytes, options.prompt_cache_entries) {
  prefix_cache_.set_tier(ssd_cache_.get());
  if (options_.max_batch < 1) throw Error("max_batch must be at least 1");
  if (options_.prefill_batch < 1) throw Error("prefill_batch must be at least 1");
  if (draft_) check_draft_compatible(runtime, *draft_);
  const auto caches = runtime.model().make_caches();
  signature_ = cache_list_signature(caches);
  std::optional<int> window;
  for (const auto& cache : caches)
    if (!window) window = cache->window();
  if (runtime.kernels() == KernelMode::stock && options_.max_batch > 1 && window)
    phases_.emplace(*window);
}

Scheduler::~Scheduler() = default;

void Scheduler::validate(TextRequest& request) const {
  const auto& prompt = request.prompt_ids;
  const int vocab = runtime_.model().vocab_size();
  const int context = runtime_.context_size();
  if (prompt.empty()) throw Error("the prompt is empty");
  // Tokens held before the prompt (a cached prompt it continues).
  const int held = request.cached_prompt ? request.cached_prompt->tokens : 0;
  const int length = held + static_cast<int>(prompt.size());
  if (length >= context)
    throw Error("the prompt has " + std::to_string(length) +
                " tokens, more than the context size " + std::to_string(context) + " allows");
  for (int id : prompt)
    if (id < 0 || id >= vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(vocab) + ")");
  auto& options = request.options;
  if (options.max_tokens < 0) throw Error("max_tokens must be >= 0");
  validate_sampler_options(options.sampler, vocab);
  validate_penalty_options(options.penalties, vocab);
  validate_kv_cache_scheme(options.kv_cache, runtime_.model());
  if (request.cached_prompt) {
    check_cached_prompt_scheme(request.cached_prompt->caches, options.kv_cache);
    if (options.speculative.enabled())
      throw Error("speculative decoding does not continue a cached prompt (the draft has none)");
    if (options.adapters)
      throw Error(
          "a prompt-cache file holds the base model's keys and values: it is not continued "
          "with adapters");
  }
  if (options.speculative.enabled()) {
    validate_speculative_options(options.speculative);
    if (options.speculative.kind == DraftKind::draft_model && !draft_)
      throw Error("speculative decoding with a draft model needs one loaded (--draft-model)");
    if (phases_)
      throw Error(
          "speculative decoding on the stock kernels of a model with sliding windows needs "
          "--max-batch 1 (its batched windows follow mlx-lm's shared ring)");
  }
  options.max_tokens = std::min(options.max_tokens, context - length);
  options.max_tokens = admission_.fit_max_tokens(length, options.max_tokens, options.kv_cache);
  options.kernels = runtime_.kernels();
  options.prefill_step_size = prefill_chunk_;
}

SequenceId Scheduler::submit(TextRequest request, SequenceSink sink) {
  // A grammar masks each step's logits from the token before; drafted
  // tokens would need the matcher rolled back per rejection, which is not
  // built yet, so constrained requests decode plainly. A thinking budget
  // replaces tokens once it is spent, which a verified draft cannot take
  // back either.
  if (request.grammar || request.thinking.enabled())
    request.options.speculative.kind = DraftKind::none;
  validate(request);
  const SequenceId id = next_id_++;
  waiting_.push_back(std::make_unique<Sequence>(id, runtime_, std::move(request), std::move(sink)));
  return id;
}

void Scheduler::cancel(SequenceId id) {
  auto mark = [id](auto& list) {
    for (auto& sequence : list)
      if (sequence->id() == id) sequence->cancel();
  };
  mark(waiting_);
  mark(prefilling_);
  mark(decoding_);
  mark(speculating_);
}

bool Scheduler::has_work() const {
  return !waiting_.empty() || !prefilling_.empty() || !decoding_.empty() || !speculating_.empty();
}

SchedulerCounts Scheduler::counts() const {
  SchedulerCounts counts;
  counts.waiting = static_cast<int>(waiting_.size());
  counts.prefilling = static_cast<int>(prefilling_.size());
  counts.decoding = static_cast<int>(decoding_.size() + speculating_.size());
  counts.speculating = static_cast<int>(speculating_.size());
  counts.shared_verifies = shared_verifies_;
  for (const auto* list : {&prefilling_, &decoding_, &speculating_})
    for (const auto& sequence : *list) counts.kv_bytes += cache_list_bytes(sequence->caches());
  counts.kv_reserved_bytes = reserved_bytes_;
  counts.memory_budget = admission_.budget();
  counts.weight_bytes = admission_.weight_bytes();
  counts.resident_bytes = admission_.resident_bytes();
  counts.prefix_cache_bytes = prefix_cache_.bytes();
  counts.prefix_cache_entries = prefix_cache_.entries();
  if (ssd_cache_) {
    counts.ssd_cache = ssd_cache_->counts();
    counts.ssd_cache_enabled = true;
  }
  return counts;
}

void Scheduler::step() {
  try {
    reap_cancelled();
    if (!decoding_.empty()) {
      const auto phases = phases_ ? phases_->decode() : std::vector<int>{};
      const auto kept = decode(decoding_, /*first_step=*/false, phases);
      if (phases_) phases_->keep_decoding(kept);
    }
    auto resumed = resume_speculation();
    if (!speculating_.empty() || !resumed.empty()) speculate(std::move(resumed));
    if (running() >= options_.max_batch) return;
    admit();
    // Prompts with only their last token left start decoding: one forward
    // of those rows alone, then they join the decoding batch.
    std::vector<std::unique_ptr<Sequence>> still_prefilling;
    std::vector<int> starting_rows;
    for (std::size_t b = 0; b < prefilling_.size(); ++b) {
      auto& sequence = prefilling_[b];
      const bool starts = sequence->prompt_tokens_left_to_prefill() == 0;
      if (starts && sequence->draft_source()) {
        // Its first speculative step (next step) feeds the prompt's last token.
        speculating_.push_back(std::move(sequence));
        continue;
      }
      if (starts) starting_rows.push_back(static_cast<int>(b));
      (starts ? starting_ : still_prefilling).push_back(std::move(sequence));
    }
    prefilling_ = std::move(still_prefilling);
    if (!starting_.empty()) {
      const int decoding_before = static_cast<int>(decoding_.size());
      const auto phases = phases_ ? phases_->start_decoding(starting_rows) : std::vector<int>{};
      const auto kept = decode(starting_, /*first_step=*/true, phases);
      for (auto& sequence : starting_) decoding_.push_back(std::move(sequence));
      starting_.clear();
      if (phases_ && kept.size() != starting_rows.size()) {
        std::vector<int> keep;
        for (int b = 0; b < decoding_before; ++b) keep.push_back(b);
        for (int b : kept) keep.push_back(decoding_before + b);
        phases_->keep_decoding(keep);
      }
    }
    if (!prefilling_.empty()) prefill(prefilling_);
    if (++steps_ % kClearCacheSteps == 0) mx::clear_cache();
  } catch (...) {
    fail_all(std::current_exception());
  }
}

void Scheduler::reap_cancelled() {
  // Returns the indices of the rows that stay.
  auto reap = [this](auto& list) {
    std::vector<int> kept;
    for (std::size_t b = 0; b < list.size(); ++b) {
      if (list[b]->cancel_requested())
        retire(std::move(list[b]));
      else
        kept.push_back(static_cast<int>(b));
    }
    const bool changed = kept.size() != list.size();
    list.erase(std::remove(list.begin(), list.end(), nullptr), list.end());
    return std::pair{changed, kept};
  };
  reap(waiting_);
  auto [prefill_changed, prefill_kept] = reap(prefilling_);
  auto [decode_changed, decode_kept] = reap(decoding_);
  reap(speculating_);
  if (phases_ && prefill_changed) phases_->keep_prefilling(prefill_kept);
  if (phases_ && decode_changed) phases_->keep_decoding(decode_kept);
}

void Scheduler::admit() {
  const int room = std::min(options_.prefill_batch - static_cast<int>(prefilling_.size()),
                            options_.max_batch - running());
  for (int i = 0; i < room && !waiting_.empty(); ++i) {
    const auto reserved = reservation(*waiting_.front());
    if (!reserved) break;  // waits for running sequences to finish
    auto sequence = std::move(waiting_.front());
    waiting_.pop_front();
    const auto& cached_prompt = sequence->request().cached_prompt;
    auto hit = cached_prompt ? std::nullopt
                             : prefix_cache_.lookup(sequence->prompt(), cache_key(*sequence));
    if (cached_prompt)
      sequence->start(clone_cache_list(cached_prompt->caches), 0);
    else if (hit)
      sequence->start(std::move(hit->caches), hit->tokens);
    else
      sequence->start(runtime_.model().make_caches(), 0);
    const auto& speculative = sequence->request().options.speculative;
    if (speculative.enabled()) sequence->set_draft_source(make_draft_source(speculative));
    sequence->reserved_bytes = *reserved;
    reserved_bytes_ += *reserved;
    prefilling_.push_back(std::move(sequence));
    if (phases_) phases_->admit(1);
  }
}

void Scheduler::set_resident_bytes(std::size_t bytes) {
  if (admission_.limited()) {
    const std::size_t budget = admission_.budget(), weights = admission_.weight_bytes();
    if (weights + bytes + reserved_bytes_ > budget)
      throw MemoryAdmissionError(
          "the memory budget of " + std::to_string(budget) + " bytes cannot hold " +
          std::to_string(bytes) + " bytes beside the weights and the running sequences (" +
          std::to_string(reserved_bytes_) + " bytes reserved); try again when fewer run");
  }
  admission_.set_resident_bytes(bytes);
  fit_prefix_cache();
}

void Scheduler::fit_prefix_cache() {
  if (!admission_.limited()) return;
  const std::size_t room = admission_.cache_room();
  prefix_cache_.shrink_to(room > reserved_bytes_ ? room - reserved_bytes_ : 0);
}

std::string Scheduler::cache_key(const Sequence& sequence) const {
  // Keys and values depend on the adapters too (they change the projections).
  const auto& options = sequence.request().options;
  return signature_ + "|" + options.kv_cache.signature() + "|" +
         (options.adapters ? options.adapters->identity() : std::string());
}

std::optional<std::size_t> Scheduler::reservation(const Sequence& sequence) {
  if (!admission_.limited()) return 0;
  const auto& request = sequence.request();
  // A verify holds its rejected drafts until they are trimmed.
  const auto& speculative = request.options.speculative;
  const int drafts = speculative.enabled() ? speculative.draft_tokens : 0;
  const int held = request.cached_prompt ? request.cached_prompt->tokens : 0;
  const std::size_t need = admission_.sequence_bytes(
      held + static_cast<int>(request.prompt_ids.size()) + request.options.max_tokens + drafts,
      request.options.kv_cache);
  const std::size_t room = admission_.cache_room();
  if (reserved_bytes_ + need > room) return std::nullopt;
  prefix_cache_.shrink_to(room - reserved_bytes_ - need);
  return need;
}

mx::array Scheduler::forward(const mx::array& tokens, std::vector<std::unique_ptr<Sequence>>& rows,
                             const std::vector<int>& phases) {
  if (rows.size() == 1 && phases.empty())
    return runtime_.model().forward(tokens, rows.front()->caches(),
                                    rows.front()->request().options.adapters.get());
  ForwardBatch batch;
  for (std::size_t b = 0; b < rows.size(); ++b)
    batch.rows.push_back({&rows[b]->caches(),
                          phases.empty() ? std::nullopt : std::optional<int>(phases[b]),
                          rows[b]->request().options.adapters.get()});
  return runtime_.model().forward_batch(tokens, batch);
}

std::vector<int> Scheduler::decode(std::vector<std::unique_ptr<Sequence>>& rows, bool first_step,
                                   const std::vector<int>& phases) {
  const int batch = static_cast<int>(rows.size());
  std::vector<mx::array> inputs;
  for (auto& row : rows) {
    if (first_step) {
      // A cache that cannot be trimmed (a sliding window) is kept as it
      // stands at the prompt's boundary, as mlx-lm's server does: later
      // turns of the conversation start from it.
      if (!all_trimmable(row->caches()) && !row->request().cached_prompt)
        prefix_cache_.insert(std::vector<int>(row->prompt().begin(), row->prompt().end() - 1),
                             clone_cache_list(row->caches()), cache_key(*row));
      row->begin_decoding();
      inputs.push_back(mx::array({row->prompt().back()}, mx::int32));
    } else {
      inputs.push_back(row->next_input());
    }
  }
  auto tokens = mx::reshape(batch == 1 ? inputs.front() : mx::concatenate(inputs), {batch, 1});
  auto logits = forward(mx::astype(tokens, mx::int32), rows, phases);
  for (auto& row : rows) apply_kv_cache_scheme(row->caches(), row->request().options.kv_cache);
  const int vocab = logits.shape(2);
  std::vector<std::pair<mx::array, mx::array>> sampled;
  std::vector<mx::array> outputs;
  for (int b = 0; b < batch; ++b) {
    auto row_logits =
        batch == 1 ? mx::reshape(logits, {1, vocab})
                   : mx::reshape(mx::slice(logits, {b, 0, 0}, {b + 1, 1, vocab}), {1, vocab});
    sampled.push_back(rows[b]->sample(row_logits));
    outputs.push_back(sampled.back().first);
    outputs.push_back(sampled.back().second);
  }
  mx::async_eval(outputs);
  std::vector<int> kept;
  for (int b = 0; b < batch; ++b) {
    auto& row = rows[b];
    row->schedule(std::move(sampled[b]));
    const bool finished =
        first_step ? row->request().options.max_tokens == 0 : !row->deliver_fed_token();
    if (finished)
      retire(std::move(row));
    else
      kept.push_back(b);
  }
  rows.erase(std::remove(rows.begin(), rows.end(), nullptr), rows.end());
  return kept;
}

void Scheduler::prefill(std::vector<std::unique_ptr<Sequence>>& rows) {
  // Each row's chunk on its own, as a batch of one would prefill it (one
  // forward for all would only pad them to one length).
  std::vector<std::vector<int>> chunks;
  std::vector<int> lengths;
  for (auto& row : rows) {
    chunks.push_back(row->take_prefill_chunk(prefill_chunk_));
    lengths.push_back(static_cast<int>(chunks.back().size()));
  }
  if (phases_) phases_->prefill(lengths);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (chunks[b].empty()) continue;
    auto tokens = mx::array(chunks[b].data(), {1, lengths[b]}, mx::int32);
    runtime_.model().forward(tokens, rows[b]->caches(), rows[b]->request().options.adapters.get());
    apply_kv_cache_scheme(rows[b]->caches(), rows[b]->request().options.kv_cache);
    evaluate_cache_state(rows[b]->caches());
  }
  mx::clear_cache();
}

void Scheduler::speculate(std::vector<std::unique_ptr<Sequence>> resumed) {
  const std::size_t before = speculating_.size();
  for (auto& sequence : resumed) speculating_.push_back(std::move(sequence));
  // Every sequence drafts first (a resumed one's schedule was just asked
  // whether drafting pays). On the fast path the verifies that go position
  // by position then run in one forward, each weight read once for all
  // their rows; the others verify alone.
  std::vector<DraftedStep> steps;
  steps.reserve(speculating_.size());
  for (std::size_t i = 0; i < speculating_.size(); ++i) {
    auto& sequence = *speculating_[i];
    steps.push_back(draft_step(runtime_, sequence,
                               schedule_for(sequence.request().options.speculative), i >= before));
  }
  std::vector<std::optional<mx::array>> logits(steps.size());
  std::vector<double> forward_seconds(steps.size(), 0.0);
  std::vector<DraftedStep*> together;
  if (runtime_.kernels() == KernelMode::fast)
    for (auto& step : steps)
      if (step.stepwise) together.push_back(&step);
  if (together.size() >= 2 && options_.shared_verifies) {
    const auto start = std::chrono::steady_clock::now();
    auto rows = verify_forward_together(runtime_, together);
    mx::eval(rows);
    ++shared_verifies_;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::size_t total_rows = 0;
    for (const auto* step : together) total_rows += step->fed.size();
    for (std::size_t j = 0; j < together.size(); ++j) {
      const std::size_t i = static_cast<std::size_t>(together[j] - steps.data());
      logits[i] = std::move(rows[j]);
      // Each verify's share of the forward, by its rows.
      forward_seconds[i] = seconds * together[j]->fed.size() / total_rows;
    }
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto& sequence = speculating_[i];
    if (!logits[i]) {
      const auto start = std::chrono::steady_clock::now();
      logits[i] = verify_forward(runtime_, steps[i]);
      mx::eval(*logits[i]);
      forward_seconds[i] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const auto outcome = finish_step(runtime_, steps[i], *logits[i], forward_seconds[i]);
    if (!outcome.goes_on) {
      retire(std::move(sequence));
    } else if (outcome.verified_drafts == 0) {
      // Plain steps go through the batched decode, which builds the next
      // step's graph while this one computes (a step of its own here
      // waits for each token).
      sequence->enter_plain_decoding();
      sequence->plain_step_end.reset();
      decoding_.push_back(std::move(sequence));
    }
  }
  speculating_.erase(std::remove(speculating_.begin(), speculating_.end(), nullptr),
                     speculating_.end());
}

std::vector<std::unique_ptr<Sequence>> Scheduler::resume_speculation() {
  std::vector<std::unique_ptr<Sequence>> resumed;
  // Speculation is refused where phases_ tracks the batch's rows.
  if (phases_) return resumed;
  const auto now = Sequence::Clock::now();
  for (auto& sequence : decoding_) {
    if (!sequence->draft_source()) continue;
    if (auto* schedule = schedule_for(sequence->request().options.speculative)) {
      // From the end of one plain step to the end of the next: what a
      // plain token costs while the decode is pipelined (the first step
      // after a speculative one is not).
      if (sequence->plain_step_end)
        schedule->record_cost(
            1, std::chrono::duration<double>(now - *sequence->plain_step_end).count(), 0, -1, -1);
      sequence->plain_step_end = now;
    }
    if (!drafts_worth_verifying(*sequence)) continue;
    sequence->plain_step_end.reset();
    if (sequence->leave_plain_decoding())
      resumed.push_back(std::move(sequence));
    else
      retire(std::move(sequence));
  }
  decoding_.erase(std::remove(decoding_.begin(), decoding_.end(), nullptr), decoding_.end());
  return resumed;
}

bool Scheduler::drafts_worth_verifying(Sequence& sequence) {
  const auto& options = sequence.request().options;
  // The token being sampled comes first, then up to draft_tokens drafts.
  const int left = options.max_tokens - sequence.generated_tokens() - 1;
  const int limit = std::min(options.speculative.draft_tokens, left);
  if (limit <= 0) return false;
  auto* schedule = schedule_for(options.speculative);
  if (options.speculative.kind == DraftKind::draft_model)
    return !schedule || schedule->worth_drafting(limit);
  // Prompt lookup costs nothing to ask: what it would propose after the
  // tokens delivered so far (its first draft guesses the token being
  // sampled; a copy that goes on past it drafts the rest).
  const auto draft = sequence.draft_source()->propose(sequence.history(), limit, {});
  if (draft.tokens.empty()) return false;
  return !schedule || schedule->choose(draft.confidence) > 0;
}

DraftSchedule* Scheduler::schedule_for(const SpeculativeOptions& options) {
  if (!options.confidence) return nullptr;
  auto& schedule = schedules_[options.kind];
  if (!schedule) {
    std::optional<std::filesystem::path> file;
    if (options_.keep_draft_calibration)
      file = draft_schedule_file(runtime_.loaded().directory, options.kind,
                                 options.kind == DraftKind::draft_model ? draft_->loaded().directory
                                                                        : std::filesystem::path());
    schedule = std::make_unique<DraftSchedule>(options.kind, file);
  }
  return schedule.get();
}

std::unique_ptr<DraftSource> Scheduler::make_draft_source(const SpeculativeOptions& options) const {
  if (options.kind == DraftKind::prompt_lookup)
    return std::make_unique<PromptLookup>(options.ngram);
  return std::make_unique<DraftModelSource>(*draft_, prefill_chunk_);
}

void Scheduler::retire(std::unique_ptr<Sequence> sequence) {
  reserved_bytes_ -= sequence->reserved_bytes;
  sequence->reserved_bytes = 0;
  auto tokens = sequence->finish();
  auto& caches = sequence->caches();
  if (caches.empty() || tokens.empty()) return;
  // Bookkeeping that disagrees with the caches is never reused.
  if (caches.front()->offset() != static_cast<int>(tokens.size())) return;
  prefix_cache_.insert(std::move(tokens), std::move(caches), cache_key(*sequence));
  fit_prefix_cache();
}

void Scheduler::fail_all(std::exception_ptr error) {
  for (auto* list : {&prefilling_, &starting_, &decoding_, &speculating_})
    for (auto& sequence : *list)
      if (sequence) sequence->fail(error);
  for (auto& sequence : waiting_) sequence->fail(error);
  waiting_.clear();
  prefilling_.clear();
  starting_.clear();
  decoding_.clear();
  speculating_.clear();
  reserved_bytes_ = 0;
}

}  // namespace mlx_cpp
