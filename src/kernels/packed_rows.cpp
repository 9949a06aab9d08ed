#include "kernels/packed_rows.h"

#include "kernels/primitive_base.h"
#include "kernels/turbo_codec.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

// Codes of one row as floats: value i at bits [i*bits, (i+1)*bits) of the
// words, bits a power of two (no code straddles two words).
template <int bits>
void unpack_codes(const std::uint32_t* words, int width, float* dst) {
  constexpr int per_word = 32 / bits;
  constexpr std::uint32_t mask = (1u << bits) - 1;
  for (int w = 0; w < width / per_word; ++w) {
    const std::uint32_t word = words[w];
    for (int k = 0; k < per_word; ++k) dst[w * per_word + k] = float((word >> (k * bits)) & mask);
  }
}

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
      width_(codes.shape(3) * 32 / bits) {}

void AffinePackedRows::prefetch_rows(int b, int h, int s, int count) const {
  for (int j = 0; j < count; ++j) prefetch(codes_.row(b, h, s + j), width_ * bits_ / 8);
}

void AffinePackedRows::load_rows(int b, int h, int s, int count, float* dst) const {
  const int groups = width_ / group_size_;
  float scales[64], biases[64];  // groups <= width / 32 (group sizes 32 to 128)
  for (int j = 0; j < count; ++j, dst += width_) {
    const std::uint32_t* words = codes_.row(b, h, s + j);
    switch (bits_) {
      case 2:
        unpack_codes<2>(words, width_, dst);
        break;
      case 4:
        unpack_codes<4>(words, width_, dst);
        break;
      default:
        unpack_codes<8>(words, width_, dst);
        break;
    }
    const std::size_t factors =
        b * factor_strides_[0] + h * factor_strides_[1] + (s + j) * factor_strides_[2];
    qmm::load_as_float(scales_.data<void>(), factor_type_, factors, groups, scales);
    qmm::load_as_float(biases_.data<void>(), factor_type_, factors, groups, biases);
    for (int g = 0; g < groups; ++g) {
      float* values = dst + g * group_size_;
      for (int i = 0; i < group_size_; ++i) values[i] = values[i] * scales[g] + biases[g];
    }
  }
}

TurboPackedRows::TurboPackedRows(const mx::array& codes, const mx::array& norms, int bits,
                                 int group_size)
    : codes_(codes),
      norms_(norms),
      bits_(bits),
      group_size_(group_size),
      heads_(codes.shape(1)),
      width_(codes.shape(3) * 32 / bits) {}

void TurboPackedRows::prefetch_rows(int b, int h, int s, int count) const {
  for (int j = 0; j < count; ++j) prefetch(codes_.row(b, h, s + j), width_ * bits_ / 8);
}

void TurboPackedRows::load_rows(int b, int h, int s, int count, float* dst) const {
  for (int j = 0; j < count; ++j, dst += width_)
    turbo::decode_row_rotated(codes_.row(b, h, s + j), norms_.row(b, h, s + j), width_, bits_,
                              group_size_, dst);
}

void TurboPackedRows::to_row_basis(float* query) const {
  turbo::rotate(query, width_, group_size_);
}

void TurboPackedRows::from_row_basis(float* output) const {
  turbo::rotate_back(output, width_, group_size_);
}

}  // namespace mlx_cpp::kernels
