// The eager helpers that are not a kernel op of their own: buffers, the
// residual add and the write of one token into a cache's storage.
#include "kernels/eager.h"

#include <mlx/allocator.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels::eager {

namespace mx = mlx::core;

namespace {
constexpr int kBlock = 1024;  // elements per load/add/store step
}  // namespace

mx::array allocated_array(const mx::Shape& shape, mx::Dtype dtype) {
  std::size_t size = 1;
  for (int extent : shape) size *= static_cast<std::size_t>(extent);
  return mx::array(mx::allocator::malloc(size * mx::size_of(dtype)), shape, dtype);
}

void add(const mx::array& a, const mx::array& b, mx::array& out) {
  // b has a's size, or that of one row of a (a bias added to every row).
  const int row = static_cast<int>(b.size());
  const int rows = static_cast<int>(out.size()) / row;
  const int blocks_per_row = (row + kBlock - 1) / kBlock;
  parallel_ranges(rows * blocks_per_row, 16, [&](Range range) {
    const VectorOps& ops = vector_ops();
    float a_block[kBlock], b_block[kBlock];
    for (int task = range.begin; task < range.end; ++task) {
      const int block = task % blocks_per_row;
      const std::size_t b_offset = static_cast<std::size_t>(block) * kBlock;
      const std::size_t offset = static_cast<std::size_t>(task / blocks_per_row) * row + b_offset;
      const int count = std::min(kBlock, row - block * kBlock);
      ops.load(a.data<void>(), scalar_type_of(a.dtype()), offset, count, a_block);
      ops.load(b.data<void>(), scalar_type_of(b.dtype()), b_offset, count, b_block);
      // y += 1 * x rounds the exact sum once to float32, as a float add.
      ops.axpy(1.0f, b_block, a_block, count);
      ops.store(a_block, count, out.data<void>(), scalar_type_of(out.dtype()), offset);
    }
  });
}

void scale_leading(const mx::array& x, int width, float factor, mx::array& out) {
  const VectorOps& ops = vector_ops();
  const auto type = scalar_type_of(x.dtype());
  float rounded_factor;
  {
    std::uint16_t half_factor[2];
    ops.store(&factor, 1, half_factor, type, 0);
    ops.load(half_factor, type, 0, 1, &rounded_factor);
  }
  const int D = x.shape(-1);
  const int rows = static_cast<int>(x.size() / D);
  std::vector<float> row(D);
  for (int r = 0; r < rows; ++r) {
    const std::size_t offset = static_cast<std::size_t>(r) * D;
    ops.load(x.data<void>(), type, offset, D, row.data());
    for (int i = 0; i < width; ++i) row[i] *= rounded_factor;
    ops.store(row.data(), D, out.data<void>(), type, offset);
  }
}

void copy_batch_row(const mx::array& batch, int row, mx::array& out) {
  const std::size_t bytes = out.nbytes();
  std::memcpy(out.data<char>(), batch.data<char>() + row * bytes, bytes);
}

void store_batch_row(const mx::array& row_array, mx::array& batch, int row) {
  const std::size_t bytes = row_array.nbytes();
  std::memcpy(batch.data<char>() + row * bytes, row_array.data<char>(), bytes);
}

void write_sequence_row(const mx::array& src, mx::array& dst, int position) {
  const VectorOps& ops = vector_ops();
  const int D = src.shape(3);
  const int rows = src.shape(0) * src.shape(1);  // one per (batch, head)
  const std::size_t capacity = dst.shape(2);
  std::vector<float> row(D);
  for (int r = 0; r < rows; ++r) {
    ops.load(src.data<void>(), scalar_type_of(src.dtype()), static_cast<std::size_t>(r) * D, D,
             row.data());
    ops.store(row.data(), D, dst.data<void>(), scalar_type_of(dst.dtype()),
              (r * capacity + position) * D);
  }
}

}  // namespace mlx_cpp::kernels::eager
