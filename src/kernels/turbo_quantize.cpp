// TurboQuant's codec (turbo_codec.h) as MLX ops, row by row on the CPU.
#include <sstream>

#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/turbo_codec.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr int kRowsPerTask = 16;

// The codec has no GPU kernel: a cache packed this way lives on the CPU.
FallbackPrimitive::Arrays no_gpu(const char* op) {
  reject(op, "TurboQuant runs on the CPU only");
}

class TurboQuantize : public FallbackPrimitive {
 public:
  TurboQuantize(mx::Stream stream, int bits, int group)
      : FallbackPrimitive(stream, [](const Arrays&) { return no_gpu("turbo_quantize"); }),
        bits_(bits),
        group_(group) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [bits = bits_, group = group_](const Arrays& in, Arrays& out) {
      const auto& x = in[0];
      const int d = x.shape(-1), rows = static_cast<int>(x.size() / d);
      const int words = turbo::words_per_row(d, bits), groups = d / group;
      const auto type = scalar_type_of(x.dtype());
      parallel_ranges(rows, kRowsPerTask, [&](Range range) {
        std::vector<float> row(d);
        for (int r = range.begin; r < range.end; ++r) {
          vector_ops().load(x.data<void>(), type, static_cast<std::size_t>(r) * d, d, row.data());
          turbo::encode_row(row.data(), d, bits, group,
                            out[0].data<std::uint32_t>() + static_cast<std::size_t>(r) * words,
                            out[1].data<float>() + static_cast<std::size_t>(r) * groups);
        }
      });
    });
  }
  const char* name() const override { return "TurboQuantize"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    auto codes = inputs[0].shape(), norms = inputs[0].shape();
    codes.back() = turbo::words_per_row(codes.back(), bits_);
    norms.back() /= group_;
    return {codes, norms};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const TurboQuantize&>(other);
    return bits_ == o.bits_ && group_ == o.group_;
  }

 private:
  int bits_, group_;
};

class TurboDequantize : public FallbackPrimitive {
 public:
  TurboDequantize(mx::Stream stream, int bits, int group)
      : FallbackPrimitive(stream, [](const Arrays&) { return no_gpu("turbo_dequantize"); }),
        bits_(bits),
        group_(group) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [bits = bits_, group = group_](const Arrays& in, Arrays& out) {
      const int d = out[0].shape(-1), rows = static_cast<int>(out[0].size() / d);
      const int words = turbo::words_per_row(d, bits), groups = d / group;
      parallel_ranges(rows, kRowsPerTask, [&](Range range) {
        for (int r = range.begin; r < range.end; ++r)
          turbo::decode_row(in[0].data<std::uint32_t>() + static_cast<std::size_t>(r) * words,
                            in[1].data<float>() + static_cast<std::size_t>(r) * groups, d, bits,
                            group, out[0].data<float>() + static_cast<std::size_t>(r) * d);
      });
    });
  }
  const char* name() const override { return "TurboDequantize"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    auto shape = inputs[0].shape();
    shape.back() = shape.back() * 32 / bits_;
    return {shape};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const TurboDequantize&>(other);
    return bits_ == o.bits_ && group_ == o.group_;
  }

 private:
  int bits_, group_;
};

void check_format(const char* op, int bits, int group, int dim) {
  std::ostringstream msg;
  if (!turbo::supported(bits, group))
    msg << "TurboQuant takes 2, 3, 4 or 8 bits in groups of 32, 64, 128 or 256, got " << bits
        << " bits in groups of " << group;
  else if (dim % group != 0)
    msg << "groups of " << group << " do not divide the last dimension " << dim;
  if (!msg.str().empty()) reject(op, msg.str());
}

}  // namespace

std::pair<mx::array, mx::array> turbo_quantize(const mx::array& x, int bits, int group_size,
                                               mx::StreamOrDevice s) {
  if (x.ndim() < 1 || !is_float_dtype(x.dtype()))
    reject("turbo_quantize", "x must be a float array with at least one dimension");
  check_format("turbo_quantize", bits, group_size, x.shape(-1));
  auto codes = x.shape(), norms = x.shape();
  codes.back() = turbo::words_per_row(codes.back(), bits);
  norms.back() /= group_size;
  auto outputs = mx::array::make_arrays(
      {codes, norms}, {mx::uint32, mx::float32},
      std::make_shared<TurboQuantize>(mx::to_stream(s), bits, group_size), {x});
  return {outputs[0], outputs[1]};
}

mx::array turbo_dequantize(const mx::array& codes, const mx::array& norms, int bits, int group_size,
                           mx::StreamOrDevice s) {
  if (codes.ndim() < 1 || codes.dtype() != mx::uint32 || norms.dtype() != mx::float32)
    reject("turbo_dequantize", "codes must be uint32 and norms float32");
  const int dim = codes.shape(-1) * 32 / std::max(bits, 1);
  check_format("turbo_dequantize", bits, group_size, dim);
  auto expected = codes.shape();
  expected.back() = dim / group_size;
  if (norms.shape() != expected || codes.shape(-1) * 32 != dim * bits) {
    std::ostringstream msg;
    msg << "norms " << norms.shape() << " do not fit codes " << codes.shape() << " at " << bits
        << " bits in groups of " << group_size;
    reject("turbo_dequantize", msg.str());
  }
  auto shape = codes.shape();
  shape.back() = dim;
  return mx::array(shape, mx::float32,
                   std::make_shared<TurboDequantize>(mx::to_stream(s), bits, group_size),
                   {codes, norms});
}

}  // namespace mlx_cpp::kernels
