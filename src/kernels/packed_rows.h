#pragma once
// Attention rows (attention_rows.h) read from packed keys and values, each
// block converted to float32 as attention takes it: no dequantized copy of
// a cache is ever made.
#include "kernels/attention_rows.h"
#include "kernels/packed_row_decoders.h"

namespace mlx_cpp::kernels {

// Reads a packed [B, H, S, ...] array of any strides but the last axis's
// (which must be 1): one row's elements by (b, h, s).
template <class T>
class PackedArrayRows {
 public:
  explicit PackedArrayRows(const mlx::core::array& a)
      : data_(a.data<T>()), strides_{a.strides()[0], a.strides()[1], a.strides()[2]} {}
  const T* row(int b, int h, int s) const {
    return data_ + b * strides_[0] + h * strides_[1] + s * strides_[2];
  }

 private:
  const T* data_;
  std::int64_t strides_[3];
};

// MLX's affine form: codes of 2, 4 or 8 bits in uint32 words (LSB first),
// a scale and a bias per group in a float dtype; value = scale * code +
// bias in float32.
class AffinePackedRows : public AttentionRows {
 public:
  AffinePackedRows(const mlx::core::array& codes, const mlx::core::array& scales,
                   const mlx::core::array& biases, int bits, int group_size);
  int heads() const override { return heads_; }
  int width() const override { return width_; }
  void prefetch_rows(int b, int h, int s, int count) const override;
  void load_rows(int b, int h, int s, int count, float* dst) const override;

 private:
  PackedArrayRows<std::uint32_t> codes_;
  const mlx::core::array &scales_, &biases_;
  std::int64_t factor_strides_[3];
  ScalarType factor_type_;
  int bits_, group_size_, heads_, width_;
  const PackedRowDecoders& decoders_;
};

// TurboQuant's form (turbo_codec.h): codes of 2, 3, 4 or 8 bits and a
// float32 norm per group. Rows are handed out in the rotated basis, so
// each costs a table lookup and a multiply per value; queries are rotated
// into it once and outputs back once.
class TurboPackedRows : public AttentionRows {
 public:
  TurboPackedRows(const mlx::core::array& codes, const mlx::core::array& norms, int bits,
                  int group_size);
  int heads() const override { return heads_; }
  int width() const override { return width_; }
  void prefetch_rows(int b, int h, int s, int count) const override;
  void load_rows(int b, int h, int s, int count, float* dst) const override;
  void to_row_basis(float* query) const override;
  void from_row_basis(float* output) const override;

 private:
  PackedArrayRows<std::uint32_t> codes_;
  PackedArrayRows<float> norms_;
  int bits_, group_size_, heads_, width_;
  const float* centroids_;
  const PackedRowDecoders& decoders_;
};

}  // namespace mlx_cpp::kernels
