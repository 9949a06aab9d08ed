#include <mlx/types/half_types.h>

#include <vector>

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels::qmm {

namespace {
template <typename T>
void convert_to_float(const T* src, int count, float* dst) {
  for (int i = 0; i < count; ++i) dst[i] = static_cast<float>(src[i]);
}
template <typename T>
void convert_from_float(const float* src, int count, T* dst) {
  for (int i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i]);
}
}  // namespace

void load_as_float(const void* src, ScalarType type, std::size_t offset, int count, float* dst) {
  using mlx::core::bfloat16_t;
  using mlx::core::float16_t;
  switch (type) {
    case ScalarType::float32:
      convert_to_float(static_cast<const float*>(src) + offset, count, dst);
      break;
    case ScalarType::bfloat16:
      convert_to_float(static_cast<const bfloat16_t*>(src) + offset, count, dst);
      break;
    case ScalarType::float16:
      convert_to_float(static_cast<const float16_t*>(src) + offset, count, dst);
      break;
  }
}

void store_from_float(const float* src, int count, void* dst, ScalarType type, std::size_t offset) {
  using mlx::core::bfloat16_t;
  using mlx::core::float16_t;
  switch (type) {
    case ScalarType::float32:
      convert_from_float(src, count, static_cast<float*>(dst) + offset);
      break;
    case ScalarType::bfloat16:
      convert_from_float(src, count, static_cast<bfloat16_t*>(dst) + offset);
      break;
    case ScalarType::float16:
      convert_from_float(src, count, static_cast<float16_t*>(dst) + offset);
      break;
  }
}

float* thread_scratch(int slot, std::size_t count) {
  constexpr int kSlots = 4;
  thread_local std::vector<float> buffers[kSlots];
  auto& buffer = buffers[slot % kSlots];
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

}  // namespace mlx_cpp::kernels::qmm
