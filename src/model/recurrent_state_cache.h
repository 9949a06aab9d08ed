#pragma once
// The cache of a layer whose token mixer carries state from token to token
// instead of keeping keys and values: mlx-lm's ArraysCache(size=N), a fixed
// number of slots, each empty until the layer's first tokens. lfm2's short
// convolution keeps one (its last kernel_size - 1 inputs, [B, K - 1,
// hidden]); qwen3_5's gated DeltaNet two (that and the recurrent state [B,
// value_heads, value_dim, key_dim] in float32). A recurrent state cannot be
// trimmed: the engine snapshots it instead (clone()), as it does a sliding
// window past its window.
#include <optional>
#include <vector>

#include "model/kv_cache.h"

namespace mlx_cpp {

class RecurrentStateCache : public KvCache {
 public:
  explicit RecurrentStateCache(int slots) : slots_(slots) {}
  // A saved state after `offset` tokens.
  RecurrentStateCache(std::vector<std::optional<mlx::core::array>> slots, int offset)
      : slots_(std::move(slots)), offset_(offset) {}

  int slot_count() const { return static_cast<int>(slots_.size()); }
  // The slot's array; nullopt before the layer's first tokens.
  const std::optional<mlx::core::array>& slot(int index) const { return slots_.at(index); }
  // Keeps `slots` (one per slot) after `tokens` more tokens.
  void advance(std::vector<mlx::core::array> slots, int tokens);
  // mlx-lm's saved ArraysCache holds no token count: a cache read from one
  // takes the count of the layers that keep one.
  void set_offset(int tokens) { offset_ = tokens; }

  RecurrentStateCache* as_recurrent_state() override { return this; }
  const RecurrentStateCache* as_recurrent_state() const override { return this; }
  // Such a layer holds no keys and values: attention never reaches it (the
  // model routes by the layer's mixer).
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) override;
  // One sequence masks nothing in a recurrence.
  AttentionMask make_mask(int, std::optional<int>) const override { return {}; }
  int offset() const override { return offset_; }
  bool is_trimmable() const override { return false; }
  bool trimmable_after(int) const override { return false; }
  int trim(int) override { return 0; }
  size_t byte_size() const override;
  // The state's size, whatever the length (0 before its first update).
  size_t bytes_for_tokens(int, int) const override { return byte_size(); }
  std::string signature() const override { return "recurrent_state"; }
  std::vector<mlx::core::array> state() const override;
  std::unique_ptr<KvCache> clone() const override;
  // mlx-lm's ArraysCache state: ([slots...], left_padding, lengths), the
  // last two None for one sequence.
  CacheState saved_state() const override;

 private:
  std::vector<std::optional<mlx::core::array>> slots_;
  int offset_ = 0;
};

}  // namespace mlx_cpp
