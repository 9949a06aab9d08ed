// Rows of quantized weights by index, in MLX's layout whatever the stored
// one: an embedding lookup on a table that is also the tied output head,
// row-interleaved for the head's kernels. Built from MLX ops (lazy, so a
// decode step's token id need not be known yet), it moves the same bytes
// MLX's layout holds, so dequantizing the result gives the stock lookup's
// values bit for bit.
#include <mlx/ops.h>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace mx = mlx::core;

QuantizedWeights gather_rows(const QuantizedWeights& weights, const mx::array& ids, int group_size,
                             int bits) {
  const auto &w = weights.w, &scales = weights.scales, &biases = weights.biases;
  if (weights.layout == WeightLayout::mlx)
    return {mx::take(w, ids, 0), mx::take(scales, ids, 0), mx::take(biases, ids, 0)};
  const int K = w.shape(1) * 8 / bits, units = K / 4, groups = K / group_size;
  const auto id = mx::astype(ids, mx::int32);
  const auto block = mx::expand_dims(mx::floor_divide(id, mx::array(16)), -1);
  const auto lane = mx::expand_dims(mx::remainder(id, mx::array(16)), -1);
  // A row's 4 k of one unit are one item (2 bytes at 4 bits, 3 at 6, 4 at
  // 8), the item of (block, unit, lane) at (block x units + unit) x 16 +
  // lane.
  auto at = [&](int per_block) {
    const auto offsets = mx::arange(per_block, mx::int32);
    return mx::add(
        mx::multiply(mx::add(mx::multiply(block, mx::array(per_block)), offsets), mx::array(16)),
        lane);
  };
  const auto factor_at = at(groups);
  auto factors = [&](const mx::array& all) { return mx::take(mx::flatten(all), factor_at); };
  if (bits == 6) {
    // A row's 3 bytes of a unit are MLX's bytes for those 4 k, in order.
    auto bytes =
        mx::take(mx::flatten(w), mx::add(mx::expand_dims(mx::multiply(at(units), mx::array(3)), -1),
                                         mx::arange(3, mx::int32)));
    auto shape = bytes.shape();
    shape.pop_back();
    shape.back() = units * 3;
    return {mx::view(mx::reshape(bytes, shape), mx::uint32), factors(scales), factors(biases)};
  }
  const mx::Dtype word = bits == 4 ? mx::uint16 : mx::uint32;
  auto words = mx::take(mx::flatten(mx::view(w, word)), at(units));
  // Within a word the interleaved order swaps the middle two of four
  // codes (nibbles at 4 bits, bytes at 8); MLX's order has k0 lowest.
  const unsigned low_high = bits == 4 ? 0xF00Fu : 0xFF0000FFu;
  const unsigned second = bits == 4 ? 0x00F0u : 0x0000FF00u;
  auto mask = [&](unsigned value) { return mx::astype(mx::array(value, mx::uint32), word); };
  auto shift = mx::astype(mx::array(bits), word);
  words =
      mx::bitwise_or(mx::bitwise_and(words, mask(low_high)),
                     mx::bitwise_or(mx::left_shift(mx::bitwise_and(words, mask(second)), shift),
                                    mx::bitwise_and(mx::right_shift(words, shift), mask(second))));
  return {mx::view(words, mx::uint32), factors(scales), factors(biases)};
}

}  // namespace mlx_cpp::kernels
