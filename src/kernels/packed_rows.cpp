#include "kernels/packed_rows.h"

#include <algorithm>

#include "kernels/packed_row_decoders.h"
#include "kernels/primitive_base.h"
#include "kernels/turbo_codec.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

void prefetch(const void* first, std::size_t bytes) {
  const char* p = static_cast<const char*>(first);
  for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + offset);
}

}  // namespace

AffinePackedRows::AffinePackedRows(const mx::array& codes, const mx::array& scales,
                                   const mx::array& biases, int bits, int group_size)
    : codes_(codes),
      scales_(scales),
      biases_(biases),
      factor_strides_{scales.strides()[0], scales.strides()[1], scales.strides()[2]},
      factor_type_(scalar_type_of(scales.dtype())),
      bits_(bits),
      group_size_(group_size),
      heads_(codes.shape(1)),
      width_(codes.shape(3) * 32 / bits),
      decoders_(packed_row_decoders()) {}

void AffinePackedRows::prefetch_rows(int b, int h, int s, int count) const {
  for (int j = 0; j < count; ++j) prefetch(codes_.row(b, h, s + j), width_ * bits_ / 8);
}

void AffinePackedRows::load_rows(int b, int h, int s, int count, float* dst) const {
  const int groups = width_ / group_size_;
  // The rows' factors, converted a block of rows at a time where they sit
  // one after another (a cache's storage), else row by row.
  constexpr int kFactors = 1024;
  float scales[kFactors], biases[kFactors];
  const int rows_per_load = factor_strides_[2] == groups ? std::max(1, kFactors / groups) : 1;
  const auto& ops = vector_ops();
  for (int first = 0; first < count; first += rows_per_load) {
    const int rows = std::min(rows_per_load, count - first);
    const std::size_t factors =
        b * factor_strides_[0] + h * factor_strides_[1] + (s + first) * factor_strides_[2];
    ops.load(scales_.data<void>(), factor_type_, factors, rows * groups, scales);
    ops.load(biases_.data<void>(), factor_type_, factors, rows * groups, biases);
    for (int j = 0; j < rows; ++j, dst += width_)
      decoders_.affine(codes_.row(b, h, s + first + j), bits_, width_, group_size_,
                       scales + j * groups, biases + j * groups, dst);
  }
}

TurboPackedRows::TurboPackedRows(const mx::array& codes, const mx::array& norms, int bits,
                                 int group_size)
    : codes_(codes),
      norms_(norms),
      bits_(bits),
      group_size_(group_size),
      heads_(codes.shape(1)),
      width_(codes.shape(3) * 32 / bits),
      centroids_(turbo::centroids(bits, group_size)),
      decoders_(packed_row_decoders()) {}

void TurboPackedRows::prefetch_rows(int b, int h, int s, int count) const {
  for (int j = 0; j < count; ++j) prefetch(codes_.row(b, h, s + j), width_ * bits_ / 8);
}

void TurboPackedRows::load_rows(int b, int h, int s, int count, float* dst) const {
  for (int j = 0; j < count; ++j, dst += width_)
    decoders_.table(codes_.row(b, h, s + j), bits_, width_, group_size_, centroids_,
                    norms_.row(b, h, s + j), dst);
}

void TurboPackedRows::to_row_basis(float* query) const {
  turbo::rotate(query, width_, group_size_);
}

void TurboPackedRows::from_row_basis(float* output) const {
  turbo::rotate_back(output, width_, group_size_);
}

}  // namespace mlx_cpp::kernels
