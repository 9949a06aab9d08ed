// gather_quantized_matvec_fast: a decode step's chosen experts through one
// own kernel that reads only their rows and gives MLX's bits
// (expert_matvec.h says how). MLX's CPU gather_qmm runs the same
// arithmetic one scalar at a time, bfloat16 operators converting at every
// step (0.04 GB/s of weights here, docs/benchmarks.md).
#include "kernels/expert_matvec.h"

#include <mlx/ops.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"

namespace mlx_cpp::kernels {
namespace mx = mlx::core;

namespace {

// For each flat position of `out_batch`, the flat position of `batch`
// broadcast to it (size-1 axes repeat).
std::vector<int64_t> broadcast_positions(const mx::Shape& batch, const mx::Shape& out_batch) {
  const int rank = static_cast<int>(out_batch.size()),
            offset = rank - static_cast<int>(batch.size());
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int axis = rank - 1; axis >= offset; --axis) {
    const int size = batch[axis - offset];
    strides[axis] = size == 1 ? 0 : stride;
    stride *= size;
  }
  int64_t total = 1;
  for (int size : out_batch) total *= size;
  std::vector<int64_t> positions(total);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat, position = 0;
    for (int axis = rank - 1; axis >= 0; --axis) {
      position += (rest % out_batch[axis]) * strides[axis];
      rest /= out_batch[axis];
    }
    positions[flat] = position;
  }
  return positions;
}

mx::Shape batch_of(const mx::array& x) {
  return mx::Shape(x.shape().begin(), x.shape().end() - 2);
}

class GatherQuantizedMatvecFast : public FallbackPrimitive {
 public:
  GatherQuantizedMatvecFast(mx::Stream stream, Fallback fallback, int group_size, int bits)
      : FallbackPrimitive(stream, std::move(fallback)), group_size_(group_size), bits_(bits) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(
        inputs, outputs, [group_size = group_size_, bits = bits_](const Arrays& in, Arrays& out) {
          const auto &x = in[0], &w = in[1], &scales = in[2], &biases = in[3], &indices = in[4];
          const int K = x.shape(-1), N = w.shape(1), experts = w.shape(0);
          const auto out_batch = mx::Shape(out[0].shape().begin(), out[0].shape().end() - 2);
          const auto x_rows = broadcast_positions(batch_of(x), out_batch);
          const auto index_at = broadcast_positions(indices.shape(), out_batch);
          const auto* index_data = indices.data<uint32_t>();
          const std::size_t words = static_cast<std::size_t>(N) * K * bits / 32,
                            factors = static_cast<std::size_t>(N) * (K / group_size);
          const int pairs = static_cast<int>(x_rows.size());
          // Tasks of 64 output rows of one pair.
          const int blocks = (N + 63) / 64;
          const auto compute_rows = active_isa() == Isa::avx512 ? expert_matvec::rows_avx512
                                    : active_isa() == Isa::avx2 ? expert_matvec::rows_avx2
                                                                : expert_matvec::rows_scalar;
          parallel_ranges(pairs * blocks, 4, [&](Range range) {
            for (int task = range.begin; task < range.end; ++task) {
              const int pair = task / blocks, block = task % blocks;
              const uint32_t expert = index_data[index_at[pair]];
              const int first = block * 64, last = std::min(N, first + 64);
              uint16_t* out_rows = out[0].data<uint16_t>() + static_cast<std::size_t>(pair) * N;
              if (expert >= static_cast<uint32_t>(experts)) {
                // No such expert (a router gives none): NaN, not another's rows.
                std::fill(out_rows + first, out_rows + last, uint16_t{0x7FC0});
                continue;
              }
              expert_matvec::Job job{x.data<uint16_t>() + x_rows[pair] * K,
                                     w.data<uint32_t>() + expert * words,
                                     scales.data<uint16_t>() + expert * factors,
                                     biases.data<uint16_t>() + expert * factors,
                                     out_rows,
                                     K,
                                     group_size,
                                     bits};
              compute_rows(job, first, last);
            }
          });
        });
  }
  const char* name() const override { return "GatherQuantizedMatvecFast"; }
  bool is_equivalent(const mx::Primitive& other) const override {
    const auto& that = static_cast<const GatherQuantizedMatvecFast&>(other);
    return group_size_ == that.group_size_ && bits_ == that.bits_;
  }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    auto shape = mx::broadcast_shapes(batch_of(inputs[0]), inputs[4].shape());
    shape.push_back(1);
    shape.push_back(inputs[1].shape(1));
    return {shape};
  }

 private:
  int group_size_, bits_;
};

}  // namespace

mx::array gather_quantized_matvec_fast(const mx::array& x, const mx::array& w,
                                       const mx::array& scales, const mx::array& biases,
                                       const mx::array& indices, int group_size, int bits,
                                       mx::StreamOrDevice s) {
  auto stock = [=](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::gather_qmm(in[0], in[1], in[2], in[3], std::nullopt, in[4],
                                                 /*transpose=*/true, group_size, bits, "affine",
                                                 std::nullopt, /*sorted_indices=*/false, s)};
  };
  const std::vector<mx::array> inputs{x, w, scales, biases, indices};
  auto stream = mx::to_stream(s);
  const bool covered =
      stream.device == mx::Device::cpu && x.dtype() == mx::bfloat16 &&
      scales.dtype() == mx::bfloat16 && biases.dtype() == mx::bfloat16 && w.dtype() == mx::uint32 &&
      w.ndim() == 3 && x.ndim() >= 2 && x.shape(-2) == 1 && (bits == 2 || bits == 4 || bits == 8) &&
      x.shape(-1) % group_size == 0 && w.shape(2) * 32 / bits == x.shape(-1) &&
      scales.shape() == mx::Shape{w.shape(0), w.shape(1), x.shape(-1) / group_size} &&
      biases.shape() == scales.shape() && indices.dtype() == mx::uint32;
  if (!covered) return stock(inputs)[0];
  auto shape = mx::broadcast_shapes(batch_of(x), indices.shape());
  shape.push_back(1);
  shape.push_back(w.shape(1));
  return mx::array(shape, mx::bfloat16,
                   std::make_shared<GatherQuantizedMatvecFast>(stream, stock, group_size, bits),
                   inputs);
}

}  // namespace mlx_cpp::kernels
