#include "model/layer_masks.h"

namespace mlx_cpp {

std::pair<std::string, std::optional<mlx::core::array>> fused_attention_mask(
    const AttentionMask& mask) {
  switch (mask.kind) {
    case AttentionMask::Kind::causal:
      return {"causal", std::nullopt};
    case AttentionMask::Kind::array:
      return {"array", mask.mask};
    case AttentionMask::Kind::none:
      break;
  }
  return {"", std::nullopt};
}

}  // namespace mlx_cpp
