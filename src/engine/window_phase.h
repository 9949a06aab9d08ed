#pragma once
// Where mlx-lm's BatchGenerator keeps each row's sliding-window keys, so
// the stock path can attend over them in the same order.
//
// Why: mlx-lm batches sliding-window caches in one ring buffer shared by
// all rows (BatchRotatingKVCache), whose write position depends on the
// batch's history: prompt chunks, rows leaving, and batches merging (which
// re-order the ring). A decode step's attention sums a row's keys in the
// ring's physical order, and on the CPU that order changes the last bit of
// the result; nothing else about the batch does (model/forward_batch.h).
// A row's own window cache (one ring per row, as mlx-lm's single-sequence
// RotatingKVCache) can start its ring elsewhere. This class follows the
// batched cache's bookkeeping in integers only (its write position, width,
// rotation and per-row offsets and padding), event by event as the
// scheduler makes them, and tells each decoding row how many of its newest
// keys the ring holds ahead of its older ones.
#include <optional>
#include <vector>

namespace mlx_cpp {

// One batched ring's bookkeeping (mlx-lm's BatchRotatingKVCache fields).
class BatchWindowLayout {
 public:
  BatchWindowLayout(int window, int rows);
  int rows() const { return static_cast<int>(offsets_.size()); }
  // A prompt chunk of `lengths` tokens per row, right-padded to the longest.
  void prefill(const std::vector<int>& lengths);
  // One token per row (a decode step).
  void decode();
  // Keeps these rows, in this order.
  void filter(const std::vector<int>& keep);
  // Appends another batch's rows after this one's.
  void extend(BatchWindowLayout other);
  // After decode(): the count of row b's newest keys that sit at the front
  // of the ring, before its older ones (0: in temporal order).
  int newest_first(int row) const;

 private:
  void to_temporal_order();
  int window_;
  std::vector<long> left_padding_, offsets_;
  std::optional<long> width_;  // none before the first update
  long index_ = 0, total_ = 0;
  bool rotated_ = false;
};

// The prompt batch and the decode batch of the scheduler, each a ring as
// mlx-lm keeps it, with the same row order as the scheduler's lists.
class WindowPhaseTracker {
 public:
  explicit WindowPhaseTracker(int window) : window_(window) {}
  // New prompts join the prompt batch (after its rows).
  void admit(int count);
  // Prompt-batch rows `starting` (indices, ascending) leave it and take
  // their first decode step as a batch of their own, then join the end of
  // the decode batch. Returns their phases for that step.
  std::vector<int> start_decoding(const std::vector<int>& starting);
  // A prefill chunk for every prompt-batch row.
  void prefill(const std::vector<int>& lengths);
  // A decode step of the decode batch; returns each row's phase.
  std::vector<int> decode();
  // Decode-batch rows that go on (indices, ascending); the rest finished.
  void keep_decoding(const std::vector<int>& keep);
  // Prompt-batch rows that go on (a row was cancelled mid-prefill).
  void keep_prefilling(const std::vector<int>& keep);

 private:
  int window_;
  std::optional<BatchWindowLayout> prompts_, decoding_;
};

}  // namespace mlx_cpp
