#pragma once
// The cache of a short-convolution layer (lfm2): the last kernel_size - 1
// inputs of its causal convolution, [B, kernel_size - 1, hidden], as
// mlx-lm's ArraysCache(size=1) keeps them. A recurrent state cannot be
// trimmed: the engine snapshots it instead (clone()), as it does a sliding
// window past its window.
#include <optional>

#include "model/kv_cache.h"

namespace mlx_cpp {

class ConvStateCache : public KvCache {
 public:
  ConvStateCache() = default;
  // A saved state after `offset` tokens.
  ConvStateCache(const mlx::core::array& state, int offset) : state_(state), offset_(offset) {}

  // The convolution's inputs before the next tokens; nullopt before the
  // first (the layer starts from zeros).
  const std::optional<mlx::core::array>& conv_state() const { return state_; }
  // Keeps `state` after `tokens` more tokens.
  void advance(const mlx::core::array& state, int tokens);

  ConvStateCache* as_conv_state() override { return this; }
  // A convolution layer holds no keys and values: attention never reaches
  // it (the model routes by the layer's mixer).
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) override;
  // One sequence masks nothing in a convolution.
  AttentionMask make_mask(int, std::optional<int>) const override { return {}; }
  int offset() const override { return offset_; }
  bool is_trimmable() const override { return false; }
  bool trimmable_after(int) const override { return false; }
  int trim(int) override { return 0; }
  size_t byte_size() const override { return state_ ? state_->nbytes() : 0; }
  // The state's size, whatever the length (0 before its first update).
  size_t bytes_for_tokens(int, int) const override { return byte_size(); }
  std::string signature() const override { return "conv_state"; }
  std::vector<mlx::core::array> state() const override;
  std::unique_ptr<KvCache> clone() const override;
  // mlx-lm's ArraysCache state: ([state], left_padding, lengths), the last
  // two None for one sequence.
  CacheState saved_state() const override;

 private:
  std::optional<mlx::core::array> state_;
  int offset_ = 0;
};

}  // namespace mlx_cpp
