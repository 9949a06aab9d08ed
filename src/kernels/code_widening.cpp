#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/kernels.h"

namespace mlx_cpp::kernels {
namespace mx = mlx::core;

mx::array widen_quantized_codes(const mx::array& w, int from_bits, int to_bits) {
  if (w.dtype() != mx::uint32 || w.ndim() != 2)
    throw std::invalid_argument("[widen_quantized_codes] w must be uint32 [rows, words]");
  if (from_bits < 1 || to_bits <= from_bits || to_bits > 8)
    throw std::invalid_argument("[widen_quantized_codes] widths must grow within 8 bits");
  const int rows = w.shape(0);
  const std::size_t row_bits = static_cast<std::size_t>(w.shape(1)) * 32;
  if (row_bits % from_bits != 0)
    throw std::invalid_argument("[widen_quantized_codes] rows hold a whole number of codes");
  const std::size_t codes = row_bits / from_bits;
  if (codes * to_bits % 32 != 0)
    throw std::invalid_argument("[widen_quantized_codes] widened rows must fill whole words");
  const std::size_t out_words = codes * to_bits / 32;
  auto source = mx::contiguous(w);
  mx::eval(source);
  const auto* in = reinterpret_cast<const std::uint8_t*>(source.data<std::uint32_t>());
  const std::size_t in_bytes = row_bits / 8;
  std::vector<std::uint32_t> out(static_cast<std::size_t>(rows) * out_words, 0);
  auto* out_bytes = reinterpret_cast<std::uint8_t*>(out.data());
  const unsigned mask = (1u << from_bits) - 1;
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* row_in = in + static_cast<std::size_t>(r) * in_bytes;
    std::uint8_t* row_out = out_bytes + static_cast<std::size_t>(r) * out_words * 4;
    for (std::size_t i = 0; i < codes; ++i) {
      // Each code spans at most two bytes of the input stream.
      const std::size_t bit = i * from_bits;
      unsigned window = row_in[bit / 8];
      if (bit / 8 + 1 < in_bytes) window |= unsigned(row_in[bit / 8 + 1]) << 8;
      const unsigned code = (window >> (bit % 8)) & mask;
      const std::size_t out_bit = i * to_bits;
      row_out[out_bit / 8] |= static_cast<std::uint8_t>(code << (out_bit % 8));
      if ((out_bit % 8) + to_bits > 8)
        row_out[out_bit / 8 + 1] |= static_cast<std::uint8_t>(code >> (8 - out_bit % 8));
    }
  }
  return mx::array(out.begin(), {rows, static_cast<int>(out_words)}, mx::uint32);
}

}  // namespace mlx_cpp::kernels
