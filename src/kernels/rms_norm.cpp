// rms_norm_fast: one pass per row (load, sum of squares, scale, weight,
// store) instead of the six element-wise ops the stock CPU path runs.
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "rms_norm_fast";

// Rows [begin, end) of x[rows, D] -> out; weight is [D] in out's dtype.
void normalize_rows(const mx::array& x, const mx::array& weight, bool has_weight, float eps,
                    mx::array& out, Range rows) {
  const VectorOps& ops = vector_ops();
  const int D = x.shape(-1);
  const auto out_type = scalar_type_of(out.dtype());
  std::vector<float> row(D), weight_row(D), rounded(D);
  if (has_weight) ops.load(weight.data<void>(), out_type, 0, D, weight_row.data());
  std::vector<std::uint16_t> half_row(out_type == ScalarType::float32 ? 0 : D);
  for (int r = rows.begin; r < rows.end; ++r) {
    const std::size_t offset = static_cast<std::size_t>(r) * D;
    ops.load(x.data<void>(), scalar_type_of(x.dtype()), offset, D, row.data());
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

class RmsNormFast : public FallbackPrimitive {
 public:
  RmsNormFast(mx::Stream stream, Fallback fallback, float eps, bool has_weight)
      : FallbackPrimitive(stream, std::move(fallback)), eps_(eps), has_weight_(has_weight) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs,
             [eps = eps_, has_weight = has_weight_](const Arrays& in, Arrays& out) {
               const int D = in[0].shape(-1);
               const int rows = static_cast<int>(in[0].size() / D);
               parallel_ranges(rows, std::max(1, 32768 / D), [&](Range r) {
                 normalize_rows(in[0], in[1], has_weight, eps, out[0], r);
               });
             });
  }
  const char* name() const override { return "RmsNormFast"; }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const RmsNormFast&>(other);
    return eps_ == o.eps_ && has_weight_ == o.has_weight_;
  }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  float eps_;
  bool has_weight_;
};

}  // namespace

mx::array rms_norm_fast(const mx::array& x, const std::optional<mx::array>& weight, float eps,
                        mx::StreamOrDevice s) {
  if (x.ndim() == 0 || !is_float_dtype(x.dtype())) {
    reject(kOp, "x must be a float32/bfloat16/float16 array of at least 1 dimension");
  }
  if (weight && (weight->ndim() != 1 || weight->size() != static_cast<std::size_t>(x.shape(-1)))) {
    std::ostringstream msg;
    msg << "weight has shape " << weight->shape() << ", expected (" << x.shape(-1)
        << ") (last dim of x)";
    reject(kOp, msg.str());
  }
  auto out_type = weight ? mx::promote_types(x.dtype(), weight->dtype()) : x.dtype();
  if (!is_float_dtype(out_type)) reject(kOp, "weight must be a float array");
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

}  // namespace mlx_cpp::kernels
