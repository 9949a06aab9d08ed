#pragma once
// The attention masks a forward pass hands its layers, shared by the
// generic graph and the dedicated ones: one mask per kind of layer (full
// or sliding window), asked of the first such layer's cache as mlx-lm's
// models make them, and a mask in the form MLX's fused attention takes.
#include <mlx/array.h>

#include <optional>
#include <string>
#include <utility>

#include "model/kv_cache.h"

namespace mlx_cpp {

// [full, sliding] masks of the next `length` tokens: each from the cache of
// the first of the `layers` layers of its kind. sliding_of(i): whether
// layer i slides, nullopt where it does not attend over keys (a recurrent
// mixer) or keeps no cache.
template <class SlidingOf>
std::pair<AttentionMask, AttentionMask> masks_by_layer_kind(const CacheList& caches,
                                                            std::size_t layers, int length,
                                                            std::optional<int> window,
                                                            SlidingOf sliding_of) {
  AttentionMask full, sliding;
  bool have_full = false, have_sliding = false;
  for (std::size_t i = 0; i < layers && !(have_full && have_sliding); ++i) {
    const std::optional<bool> slides = sliding_of(i);
    if (!slides) continue;
    if (!*slides && !have_full) {
      full = caches[i]->make_mask(length, std::nullopt);
      have_full = true;
    } else if (*slides && !have_sliding) {
      sliding = caches[i]->make_mask(length, window);
      have_sliding = true;
    }
  }
  return {full, sliding};
}

// mx::fast::scaled_dot_product_attention's mask arguments: its mode
// ("causal", "array" or none) and the array.
std::pair<std::string, std::optional<mlx::core::array>> fused_attention_mask(
    const AttentionMask& mask);

}  // namespace mlx_cpp
