#include "kernels/attention_rows.h"

#include "kernels/primitive_base.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

StridedRows::StridedRows(const mx::array& a)
    : a_(a),
      strides_{a.strides()[0], a.strides()[1], a.strides()[2], a.strides()[3]},
      type_(scalar_type_of(a.dtype())),
      ops_(vector_ops()),
      heads_(a.shape(1)),
      width_(a.shape(3)),
      item_bytes_(a.itemsize()) {}

void StridedRows::prefetch_rows(int b, int h, int s, int count) const {
  if (count <= 0 || strides_[3] != 1 || strides_[2] != width_) return;
  const char* first = static_cast<const char*>(a_.data<void>()) +
                      (b * strides_[0] + h * strides_[1] + s * strides_[2]) * item_bytes_;
  const std::size_t bytes = static_cast<std::size_t>(count) * width_ * item_bytes_;
  for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(first + offset);
}

void StridedRows::load_rows(int b, int h, int s, int count, float* dst) const {
  if (strides_[3] == 1 && strides_[2] == width_) {
    std::size_t first = b * strides_[0] + h * strides_[1] + s * strides_[2];
    ops_.load(a_.data<void>(), type_, first, count * width_, dst);
    return;
  }
  for (int j = 0; j < count; ++j) load(b, h, s + j, dst + static_cast<std::size_t>(j) * width_);
}

void StridedRows::load(int b, int h, int s, float* dst) const {
  std::size_t first = b * strides_[0] + h * strides_[1] + s * strides_[2];
  if (strides_[3] == 1) {
    ops_.load(a_.data<void>(), type_, first, width_, dst);
  } else {
    for (int i = 0; i < width_; ++i) {
      qmm::load_as_float(a_.data<void>(), type_, first + i * strides_[3], 1, dst + i);
    }
  }
}

}  // namespace mlx_cpp::kernels
