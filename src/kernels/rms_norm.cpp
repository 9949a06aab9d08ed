// rms_norm_fast: one pass per row (load, sum of squares, scale, weight,
// store) instead of the six element-wise ops the stock CPU path runs.
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

constexpr const char* kOp = "rms_norm_fast";

// Rows [begin, end) of x[rows, D] -> out; weight is [D] in out's dtype.
// With a residual, x + residual is first stored to `sum` (rounded to its
// dtype, as MLX's add) and that rounded sum is normalized.
void normalize_rows(const mx::array& x, const mx::array* residual, const mx::array& weight,
                    bool has_weight, float eps, mx::array* sum, mx::array& out, Range rows) {
  const VectorOps& ops = vector_ops();
  const int D = x.shape(-1);
  const auto out_type = scalar_type_of(out.dtype());
  std::vector<float> row(D), weight_row(D), residual_row(residual ? D : 0);
  if (has_weight) ops.load(weight.data<void>(), out_type, 0, D, weight_row.data());
  std::vector<std::uint16_t> half_row(D);
  for (int r = rows.begin; r < rows.end; ++r) {
    const std::size_t offset = static_cast<std::size_t>(r) * D;
    ops.load(x.data<void>(), scalar_type_of(x.dtype()), offset, D, row.data());
    if (residual) {
      ops.load(residual->data<void>(), scalar_type_of(residual->dtype()), offset, D,
               residual_row.data());
      for (int i = 0; i < D; ++i) row[i] += residual_row[i];
      const auto sum_type = scalar_type_of(sum->dtype());
      ops.store(row.data(), D, sum->data<void>(), sum_type, offset);
      if (sum_type != ScalarType::float32)
        ops.load(sum->data<void>(), sum_type, offset, D, row.data());
    }
    float inverse_rms = 1.0f / std::sqrt(ops.sum_squares(row.data(), D) / D + eps);
    ops.scale(inverse_rms, row.data(), D);
    if (has_weight) {
      if (out_type != ScalarType::float32) {  // the stock op rounds here
        ops.store(row.data(), D, half_row.data(), out_type, 0);
        ops.load(half_row.data(), out_type, 0, D, row.data());
      }
      for (int i = 0; i < D; ++i) row[i] *= weight_row[i];
    }
    ops.store(row.data(), D, out.data<void>(), out_type, offset);
  }
}

// Every row of x, spread over the thread pool.
void normalize(const mx::array& x, const mx::array* residual, const mx::array& weight,
               bool has_weight, float eps, mx::array* sum, mx::array& out) {
  const int D = x.shape(-1);
  const int rows = static_cast<int>(x.size() / D);
  parallel_ranges(rows, std::max(1, 32768 / D), [&](Range r) {
    normalize_rows(x, residual, weight, has_weight, eps, sum, out, r);
  });
}

// The weight in out's dtype, as the op's astype gives it.
mx::array weight_as(const mx::array& weight, mx::Dtype dtype) {
  if (weight.dtype() == dtype) return weight;
  auto converted = eager::allocated_array(weight.shape(), dtype);
  const VectorOps& ops = vector_ops();
  std::vector<float> row(weight.size());
  ops.load(weight.data<void>(), scalar_type_of(weight.dtype()), 0, static_cast<int>(row.size()),
           row.data());
  ops.store(row.data(), static_cast<int>(row.size()), converted.data<void>(), scalar_type_of(dtype),
            0);
  return converted;
}

class RmsNormFast : public FallbackPrimitive {
 public:
  RmsNormFast(mx::Stream stream, Fallback fallback, float eps, bool has_weight)
      : FallbackPrimitive(stream, std::move(fallback)), eps_(eps), has_weight_(has_weight) {}

  // inputs {x, weight} -> {normed}, or {x, residual, weight} -> {sum, normed}.
  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs,
             [eps = eps_, has_weight = has_weight_](const Arrays& in, Arrays& out) {
               const bool add = in.size() == 3;
               normalize(in[0], add ? &in[1] : nullptr, in.back(), has_weight, eps,
                         add ? &out[0] : nullptr, out.back());
             });
  }
  const char* name() const override { return "RmsNormFast"; }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const RmsNormFast&>(other);
    return eps_ == o.eps_ && has_weight_ == o.has_weight_;
  }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    if (inputs.size() == 3) return {inputs[0].shape(), inputs[0].shape()};
    return {inputs[0].shape()};
  }

 private:
  float eps_;
  bool has_weight_;
};

// Validates the normalized input (its dtype and shape) and the weight;
// returns the output dtype.
mx::Dtype checked_output_type(mx::Dtype x_type, const mx::Shape& x_shape,
                              const std::optional<mx::array>& weight) {
  if (x_shape.empty() || !is_float_dtype(x_type)) {
    reject(kOp, "x must be a float32/bfloat16/float16 array of at least 1 dimension");
  }
  if (weight && (weight->ndim() != 1 || weight->shape(0) != x_shape.back())) {
    std::ostringstream msg;
    msg << "weight has shape " << weight->shape() << ", expected (" << x_shape.back()
        << ") (last dim of x)";
    reject(kOp, msg.str());
  }
  auto out_type = weight ? mx::promote_types(x_type, weight->dtype()) : x_type;
  if (!is_float_dtype(out_type)) reject(kOp, "weight must be a float array");
  return out_type;
}

}  // namespace

mx::array rms_norm_fast(const mx::array& x, const std::optional<mx::array>& weight, float eps,
                        mx::StreamOrDevice s) {
  const auto out_type = checked_output_type(x.dtype(), x.shape(), weight);
  auto fallback = [weight = weight.has_value(), eps, s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{
        mx::fast::rms_norm(in[0], weight ? std::optional(in[1]) : std::nullopt, eps, s)};
  };
  auto stream = mx::to_stream(s);
  auto weight_in = weight ? mx::astype(*weight, out_type, s) : mx::array(1.0f, out_type);
  if (stream.device != mx::Device::cpu) return fallback({x, weight_in})[0];
  return mx::array(x.shape(), out_type,
                   std::make_shared<RmsNormFast>(stream, fallback, eps, weight.has_value()),
                   {x, weight_in});
}

std::pair<mx::array, mx::array> add_rms_norm_fast(const mx::array& x, const mx::array& residual,
                                                  const std::optional<mx::array>& weight, float eps,
                                                  mx::StreamOrDevice s) {
  if (x.shape() != residual.shape() || !is_float_dtype(residual.dtype())) {
    std::ostringstream msg;
    msg << "residual must be a float array of x's shape " << x.shape() << ", got "
        << residual.shape();
    reject(kOp, msg.str());
  }
  const auto sum_type = mx::promote_types(x.dtype(), residual.dtype());
  const auto out_type = checked_output_type(sum_type, x.shape(), weight);
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) {
    auto sum = mx::add(x, residual, s);
    return {sum, rms_norm_fast(sum, weight, eps, s)};
  }
  auto fallback = [weight = weight.has_value(), eps, s](const std::vector<mx::array>& in) {
    auto sum = mx::add(in[0], in[1], s);
    return std::vector<mx::array>{
        sum, mx::fast::rms_norm(sum, weight ? std::optional(in[2]) : std::nullopt, eps, s)};
  };
  auto weight_in = weight ? mx::astype(*weight, out_type, s) : mx::array(1.0f, out_type);
  auto outputs = mx::array::make_arrays(
      {x.shape(), x.shape()}, {sum_type, out_type},
      std::make_shared<RmsNormFast>(stream, fallback, eps, weight.has_value()),
      {x, residual, weight_in});
  return {outputs[0], outputs[1]};
}

void eager::rms_norm(const mx::array& x, const mx::array& weight, float eps, mx::array& out) {
  normalize(x, nullptr, weight_as(weight, out.dtype()), true, eps, nullptr, out);
}

void eager::add_rms_norm(const mx::array& x, const mx::array& residual, const mx::array& weight,
                         float eps, mx::array& sum, mx::array& out) {
  normalize(x, &residual, weight_as(weight, out.dtype()), true, eps, &sum, out);
}

}  // namespace mlx_cpp::kernels
