#pragma once
// Continuous batching on the thread that owns the model. Requests are
// sequences (data); each step() decodes one token for every decoding
// sequence in one batched forward, then admits waiting sequences and
// prefills a chunk of each prefilling prompt, so a long prompt never
// freezes the streams already decoding. The policy is mlx-lm's
// BatchGenerator's (decode first, then admit up to prefill_batch prompts
// while fewer than max_batch decode, prompts in chunks of prefill_chunk,
// a prompt's last token as its first decode step), so the stock path is
// bit-exact with it (model/forward_batch.h says why rows may be computed
// on their own). Not thread-safe: one thread calls everything.
#include <cstddef>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory_admission.h"
#include "engine/model_runtime.h"
#include "engine/prefix_cache.h"
#include "engine/sequence.h"
#include "engine/speculative/draft_schedule.h"
#include "engine/ssd_cache.h"
#include "engine/window_phase.h"

namespace mlx_cpp {

struct SchedulerOptions {
  int max_batch = 8;      // sequences decoding at once (1 = strictly one after another)
  int prefill_batch = 8;  // sequences prefilling at once
  int prefill_chunk = 0;  // prompt tokens per sequence per step (0 = the kernels' default step)
  std::size_t prompt_cache_bytes = 0;    // prefix cache cap (0 = no prefix cache)
  std::size_t prompt_cache_entries = 0;  // and at most this many entries (0 = no limit)
  // The SSD tier under the prefix cache (engine/ssd_cache.h): entries
  // evicted from memory are kept in this folder, up to ssd_cache_bytes
  // (empty: no tier; needs a prefix cache).
  std::filesystem::path ssd_cache_directory;
  std::size_t ssd_cache_bytes = std::size_t(16) << 30;
  // Bytes for weights, running sequences' caches and the prefix cache
  // (0 = no limit): max_tokens is capped to fit, a request that cannot
  // generate one token is refused, and waiting sequences are admitted as
  // memory frees.
  std::size_t memory_budget = 0;
  // Confidence-scheduled speculation keeps what it learned (acceptance per
  // confidence, costs on this machine) beside the model cache.
  bool keep_draft_calibration = false;
  // On the fast path the verifies of sequences speculating at one step run
  // in one forward; false: each in a forward of its own (to compare).
  bool shared_verifies = true;
};

// A snapshot for /stats and tests.
struct SchedulerCounts {
  int waiting = 0, prefilling = 0, decoding = 0;
  // Of the decoding, those taking speculative steps now (the others of
  // speculating requests decode plainly until their drafts pay again).
  int speculating = 0;
  // Since start: forwards that verified several sequences' drafts at once.
  long long shared_verifies = 0;
  std::size_t kv_bytes = 0;           // caches of running sequences, as held now
  std::size_t kv_reserved_bytes = 0;  // what they may grow to (prompt + max_tokens)
  std::size_t memory_budget = 0, weight_bytes = 0;
  std::size_t resident_bytes = 0;  // held beside the weights: mounted adapters
  std::size_t prefix_cache_bytes = 0, prefix_cache_entries = 0;
  SsdCacheCounts ssd_cache;  // zeros without the tier
  bool ssd_cache_enabled = false;
};

class Scheduler {
 public:
  // draft: the model that drafts for requests asking for speculative
  // decoding with a draft model (checked against runtime's vocabulary).
  Scheduler(const ModelRuntime& runtime, SchedulerOptions options,
            const ModelRuntime* draft = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Checks a request (prompt, ids, options) and caps max_tokens to the
  // context left; throws Error naming the problem.
  void validate(TextRequest& request) const;
  // Queues a request (validated here); its output goes to `sink`.
  SequenceId submit(TextRequest request, SequenceSink sink);
  // Cancels at the next step (any state); unknown ids are ignored.
  void cancel(SequenceId id);
  bool has_work() const;
  void step();
  // Fails every sequence (the model raised): each sink gets the error.
  void fail_all(std::exception_ptr error);

  // Memory held beside the weights while it is set (the mounted adapters'
  // bytes): admission leaves it out of the caches' room and the prefix cache
  // shrinks to fit. Throws MemoryAdmissionError, and changes nothing, when it
  // would leave no room for one full-context sequence, or less than the
  // running sequences have reserved.
  void set_resident_bytes(std::size_t bytes);

  SchedulerCounts counts() const;
  const SchedulerOptions& options() const { return options_; }
  PrefixCache& prefix_cache() { return prefix_cache_; }
  // Copies every prefix-cache entry the SSD tier lacks down to it and
  // waits until all is on disk (no-op without the tier).
  void flush_prompt_cache() { prefix_cache_.flush(); }

 private:
  // Sequences decoding, batched or speculating.
  int running() const { return static_cast<int>(decoding_.size() + speculating_.size()); }
  void reap_cancelled();
  void admit();
  // tokens [B, 1] of `rows` → logits [B, 1, vocab]; phases: per row, as
  // WindowPhaseTracker gives them (empty when not tracked).
  mlx::core::array forward(const mlx::core::array& tokens,
                           std::vector<std::unique_ptr<Sequence>>& rows,
                           const std::vector<int>& phases);
  // One decode step of `rows`; the finished leave `rows`. Returns the
  // indices (before they left) of the rows that go on.
  std::vector<int> decode(std::vector<std::unique_ptr<Sequence>>& rows, bool first_step,
                          const std::vector<int>& phases);
  void prefill(std::vector<std::unique_ptr<Sequence>>& rows);
  // One speculative step of each speculating sequence, and of `resumed`
  // (who join them); the finished leave, and those whose step verified no
  // drafts go on in the batched decode.
  void speculate(std::vector<std::unique_ptr<Sequence>> resumed);
  // Speculating sequences decoding plainly whose drafts are worth
  // verifying again leave the batched decode (their sampled token
  // delivered); the plain steps of those that stay are timed.
  std::vector<std::unique_ptr<Sequence>> resume_speculation();
  bool drafts_worth_verifying(Sequence& sequence);
  std::unique_ptr<DraftSource> make_draft_source(const SpeculativeOptions& options) const;
  // The confidence schedule of a source (one per source, shared by its
  // sequences); null for a fixed number of drafts.
  DraftSchedule* schedule_for(const SpeculativeOptions& options);
  void retire(std::unique_ptr<Sequence> sequence);
  // Under a memory budget, shrinks the prefix cache to the caches' room less
  // what running sequences reserved.
  void fit_prefix_cache();
  // What the prefix cache files a sequence's caches under: the model's
  // cache kinds and the sequence's KV scheme.
  std::string cache_key(const Sequence& sequence) const;

  // The memory to reserve for a waiting sequence, nullopt while it does
  // not fit (the prefix cache is evicted to make room).
  std::optional<std::size_t> reservation(const Sequence& sequence);

  const ModelRuntime& runtime_;
  SchedulerOptions options_;
  const ModelRuntime* draft_;
  int prefill_chunk_;  // before admission_, which counts a chunk's bytes
  MemoryAdmission admission_;
  std::size_t reserved_bytes_ = 0;  // of sequences prefilling or decoding
  std::string signature_;           // of the caches the model makes
  // The stock path batching a model with sliding windows: where mlx-lm's
  // batched ring keeps each row's window.
  std::optional<WindowPhaseTracker> phases_;
  long long steps_ = 0;
  SequenceId next_id_ = 1;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> prefilling_;  // in admission order
  std::vector<std::unique_ptr<Sequence>> starting_;    // taking their first decode step
  std::vector<std::unique_ptr<Sequence>> decoding_;    // in batch row order
  // Decoding by speculative steps, each on its own (engine/speculative/);
  // between steps that verify no drafts, they decode plainly in decoding_.
  std::vector<std::unique_ptr<Sequence>> speculating_;
  long long shared_verifies_ = 0;
  std::map<DraftKind, std::unique_ptr<DraftSchedule>> schedules_;
  // Before the prefix cache, which hands it entries while it lives.
  std::unique_ptr<SsdCache> ssd_cache_;
  PrefixCache prefix_cache_;
};

}  // namespace mlx_cpp
