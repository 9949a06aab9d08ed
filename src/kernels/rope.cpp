// rope_fast: rotary embedding in one pass per row, with the cos/sin table
// of each position computed once and shared by all heads.
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "kernels/eager.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "rope_fast";

struct RopeParams {
  int dims;
  bool traditional;
  float base;
  float scale;
  bool has_freqs;
};

// Inverse frequencies [dims / 2] in float32, as the stock op: from freqs
// (1 / freqs) or exp(-i * log(base) / (dims / 2)).
std::vector<float> inverse_frequencies(const RopeParams& p, const mx::array* freqs) {
  const int half = p.dims / 2;
  std::vector<float> inverse(half);
  const float log_step = std::log(p.base) / half;
  for (int i = 0; i < half; ++i) {
    inverse[i] =
        freqs ? 1.0f / freqs->data<float>()[i] : std::exp(static_cast<float>(-i) * log_step);
  }
  return inverse;
}

// Rounds values to `type` and back, as the stock op's astype of cos/sin.
void round_through(ScalarType type, std::vector<float>& values,
                   std::vector<std::uint16_t>& scratch) {
  if (type == ScalarType::float32) return;
  const int n = static_cast<int>(values.size());
  vector_ops().store(values.data(), n, scratch.data(), type, 0);
  vector_ops().load(scratch.data(), type, 0, n, values.data());
}

void rotate_row(const RopeParams& p, const float* in, const float* cos, const float* sin,
                float* out, int D) {
  const int half = p.dims / 2;
  if (p.traditional) {
    for (int i = 0; i < half; ++i) {
      float x1 = in[2 * i], x2 = in[2 * i + 1];
      out[2 * i] = x1 * cos[i] - x2 * sin[i];
      out[2 * i + 1] = x1 * sin[i] + x2 * cos[i];
    }
  } else {
    for (int i = 0; i < half; ++i) {
      float x1 = in[i], x2 = in[i + half];
      out[i] = x1 * cos[i] - x2 * sin[i];
      out[i + half] = x1 * sin[i] + x2 * cos[i];
    }
  }
  for (int i = p.dims; i < D; ++i) out[i] = in[i];
}

// x viewed as [B, H, T, D]; positions [t_begin, t_end) of every b and h.
// offsets: one per batch entry, or one for all (offset_count 1).
void rope_positions(const RopeParams& p, const mx::array& x, const int* offsets,
                    std::size_t offset_count, const std::vector<float>& inverse, mx::array& out,
                    Range positions) {
  const int B = x.shape(0), T = x.shape(-2), D = x.shape(-1);
  const int H = static_cast<int>(x.size() / (static_cast<std::size_t>(B) * T * D));
  const int half = p.dims / 2;
  const auto type = scalar_type_of(x.dtype());
  const VectorOps& ops = vector_ops();
  std::vector<float> cos(half), sin(half), in(D), rotated(D);
  std::vector<std::uint16_t> scratch(half);
  for (int b = 0; b < B; ++b) {
    const int b_offset = offsets[offset_count == 1 ? 0 : b];
    for (int t = positions.begin; t < positions.end; ++t) {
      const float position = (static_cast<float>(t) + static_cast<float>(b_offset)) * p.scale;
      for (int i = 0; i < half; ++i) {
        float theta = position * inverse[i];
        cos[i] = std::cos(theta);
        sin[i] = std::sin(theta);
      }
      round_through(type, cos, scratch);
      round_through(type, sin, scratch);
      for (int h = 0; h < H; ++h) {
        std::size_t row = ((static_cast<std::size_t>(b) * H + h) * T + t) * D;
        ops.load(x.data<void>(), type, row, D, in.data());
        rotate_row(p, in.data(), cos.data(), sin.data(), rotated.data(), D);
        ops.store(rotated.data(), D, out.data<void>(), type, row);
      }
    }
  }
}

// Every position of x, spread over the thread pool.
void rotate(const RopeParams& p, const mx::array& x, const int* offsets, std::size_t offset_count,
            const mx::array* freqs, mx::array& out) {
  auto inverse = inverse_frequencies(p, freqs);
  const int T = x.shape(-2);
  const int row_elements = static_cast<int>(x.size() / T);
  parallel_ranges(T, std::max(1, 16384 / row_elements),
                  [&](Range r) { rope_positions(p, x, offsets, offset_count, inverse, out, r); });
}

class RopeFast : public FallbackPrimitive {
 public:
  RopeFast(mx::Stream stream, Fallback fallback, RopeParams params)
      : FallbackPrimitive(stream, std::move(fallback)), params_(params) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [p = params_](const Arrays& in, Arrays& out) {
      rotate(p, in[0], in[1].data<int>(), in[1].size(), p.has_freqs ? &in[2] : nullptr, out[0]);
    });
  }
  const char* name() const override { return "RopeFast"; }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const RopeFast&>(other).params_;
    return params_.dims == o.dims && params_.traditional == o.traditional &&
           params_.base == o.base && params_.scale == o.scale && params_.has_freqs == o.has_freqs;
  }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  RopeParams params_;
};

void validate(const mx::array& x, int dims, std::optional<float> base, const mx::array& offset,
              const std::optional<mx::array>& freqs) {
  std::ostringstream msg;
  if (x.ndim() < 3 || !is_float_dtype(x.dtype())) {
    msg << "x must be a float array of at least 3 dimensions, got shape " << x.shape();
  } else if (dims <= 0 || dims % 2 != 0 || dims > x.shape(-1)) {
    msg << "dims is " << dims << ", expected an even number in [2, " << x.shape(-1) << "]";
  } else if (base.has_value() == freqs.has_value()) {
    msg << "exactly one of base and freqs must be given";
  } else if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2)) {
    msg << "freqs has shape " << freqs->shape() << ", expected (" << dims / 2 << ")";
  } else if (!mx::issubdtype(offset.dtype(), mx::integer) || offset.ndim() > 1 ||
             (offset.size() != 1 && offset.size() != static_cast<std::size_t>(x.shape(0)))) {
    msg << "offset must be an integer scalar or have " << x.shape(0) << " entries, got shape "
        << offset.shape();
  }
  if (!msg.str().empty()) reject(kOp, msg.str());
}

}  // namespace

mx::array rope_fast(const mx::array& x, int dims, bool traditional, std::optional<float> base,
                    float scale, const mx::array& offset, const std::optional<mx::array>& freqs,
                    mx::StreamOrDevice s) {
  validate(x, dims, base, offset, freqs);
  auto fallback = [=](const std::vector<mx::array>& in) {
    std::optional<mx::array> f = freqs ? std::optional(in[2]) : std::nullopt;
    return std::vector<mx::array>{
        mx::fast::rope(in[0], dims, traditional, base, scale, in[1], f, s)};
  };
  std::vector<mx::array> inputs{x, mx::astype(offset, mx::int32, s)};
  if (freqs) inputs.push_back(mx::astype(*freqs, mx::float32, s));
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) return fallback(inputs)[0];
  RopeParams params{dims, traditional, base.value_or(1.0f), scale, freqs.has_value()};
  return mx::array(x.shape(), x.dtype(), std::make_shared<RopeFast>(stream, fallback, params),
                   std::move(inputs));
}

mx::array rope_fast(const mx::array& x, int dims, bool traditional, std::optional<float> base,
                    float scale, int offset, const std::optional<mx::array>& freqs,
                    mx::StreamOrDevice s) {
  return rope_fast(x, dims, traditional, base, scale, mx::array(offset, mx::int32), freqs, s);
}

void eager::rope(const mx::array& x, int dims, bool traditional, std::optional<float> base,
                 float scale, int offset, const std::optional<mx::array>& freqs, mx::array& out) {
  RopeParams params{dims, traditional, base.value_or(1.0f), scale, freqs.has_value()};
  rotate(params, x, &offset, 1, freqs ? &*freqs : nullptr, out);
}

}  // namespace mlx_cpp::kernels
