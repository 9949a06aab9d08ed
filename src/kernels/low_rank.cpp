// low_rank_update_fast: y + scale · (x @ a) @ b on chosen rows (a LoRA
// adapter's update of a projection), one pass per row in float32, rounded
// once to y's dtype, instead of seven ops per group of rows stock.
#include <mlx/ops.h>

#include <sstream>
#include <vector>

#include "kernels/eager.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "low_rank_update_fast";

// [N, width] views of x and y: the last axis against all the others.
int rows_of(const mx::array& a) {
  return static_cast<int>(a.size() / a.shape(-1));
}

// The rows' sum of terms, each row on its own (so a row's result never
// depends on which other rows share the call): z = x_row @ a, d = z @ b,
// y_row + Σ scale · d in float32, stored once.
void update_rows(const mx::array& x, const mx::array& y, const std::vector<mx::array>& factors,
                 const std::vector<LowRankTerm>& terms, mx::array& out) {
  const VectorOps& ops = vector_ops();
  // Rows are x's; y's rows are as many, of whatever shape (a decode step
  // writes [B, heads, 1, D] for [B, 1, hidden] inputs).
  const int in = x.shape(-1), rows = rows_of(x);
  const int width = static_cast<int>(y.size() / rows);
  std::vector<std::vector<const LowRankTerm*>> by_row(rows);
  for (const auto& term : terms)
    for (int row = term.row_begin; row < term.row_end; ++row) by_row[row].push_back(&term);
  const auto x_type = scalar_type_of(x.dtype()), y_type = scalar_type_of(y.dtype()),
             out_type = scalar_type_of(out.dtype());
  const bool in_place = out.data<void>() == y.data<void>();
  std::vector<float> x_row(in), y_row(width), z, delta(width);
  for (int row = 0; row < rows; ++row) {
    const std::size_t y_offset = static_cast<std::size_t>(row) * width;
    if (by_row[row].empty()) {
      if (in_place) continue;
      ops.load(y.data<void>(), y_type, y_offset, width, y_row.data());
      ops.store(y_row.data(), width, out.data<void>(), out_type, y_offset);
      continue;
    }
    ops.load(x.data<void>(), x_type, static_cast<std::size_t>(row) * in, in, x_row.data());
    ops.load(y.data<void>(), y_type, y_offset, width, y_row.data());
    for (const auto* term : by_row[row]) {
      const auto& a_t = factors[2 * term->factors];
      const auto& b = factors[2 * term->factors + 1];
      const int rank = a_t.shape(0);
      z.assign(rank, 0.0f);
      ops.dot_rows(x_row.data(), a_t.data<float>(), in, in, rank, z.data());
      ops.matmul_tile(z.data(), rank, b.data<float>(), width, delta.data(), width, 1, width, rank,
                      false);
      ops.axpy(term->scale, delta.data(), y_row.data(), width);
    }
    ops.store(y_row.data(), width, out.data<void>(), out_type, y_offset);
  }
}

class LowRankUpdateFast : public FallbackPrimitive {
 public:
  LowRankUpdateFast(mx::Stream stream, Fallback fallback, std::vector<LowRankTerm> terms)
      : FallbackPrimitive(stream, std::move(fallback)), terms_(std::move(terms)) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [terms = terms_](const Arrays& in, Arrays& out) {
      eager::low_rank_update(in[0], in[1], {in.begin() + 2, in.end()}, terms, out[0]);
    });
  }
  const char* name() const override { return "LowRankUpdateFast"; }
  bool is_equivalent(const mx::Primitive&) const override { return false; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {inputs[1].shape()};
  }

 private:
  std::vector<LowRankTerm> terms_;
};

// The same sums from MLX's ops (float32, rounded once): for other devices
// and for differentiation.
mx::array stock_low_rank_update(const mx::array& x, const mx::array& y,
                                const std::vector<mx::array>& factors,
                                const std::vector<LowRankTerm>& terms, mx::StreamOrDevice s) {
  const int in = x.shape(-1), width = y.shape(-1);
  auto flat_x = mx::reshape(mx::astype(x, mx::float32, s), {-1, in}, s);
  auto sum = mx::reshape(mx::astype(y, mx::float32, s), {-1, width}, s);
  for (const auto& term : terms) {
    auto rows = mx::slice(flat_x, mx::Shape{term.row_begin, 0}, mx::Shape{term.row_end, in}, s);
    auto delta = mx::matmul(mx::matmul(rows, mx::transpose(factors[2 * term.factors], s), s),
                            factors[2 * term.factors + 1], s);
    auto current = mx::slice(sum, mx::Shape{term.row_begin, 0}, mx::Shape{term.row_end, width}, s);
    sum = mx::slice_update(sum, mx::add(current, mx::multiply(mx::array(term.scale), delta, s), s),
                           mx::Shape{term.row_begin, 0}, mx::Shape{term.row_end, width}, s);
  }
  return mx::astype(mx::reshape(sum, y.shape(), s), y.dtype(), s);
}

}  // namespace

mx::array low_rank_update_fast(const mx::array& x, const mx::array& y,
                               const std::vector<mx::array>& factors,
                               const std::vector<LowRankTerm>& terms, mx::StreamOrDevice s) {
  if (!is_float_dtype(x.dtype()) || !is_float_dtype(y.dtype()))
    reject(kOp, "x and y must be float32/bfloat16/float16");
  if (rows_of(x) != rows_of(y) || x.ndim() != y.ndim())
    reject(kOp, "x and y must have the same rows");
  if (factors.size() % 2 != 0) reject(kOp, "factors come in pairs (a, b)");
  const int in = x.shape(-1), width = y.shape(-1), rows = rows_of(y);
  for (std::size_t i = 0; i < factors.size(); i += 2) {
    const auto &a_t = factors[i], &b = factors[i + 1];
    if (a_t.dtype() != mx::float32 || b.dtype() != mx::float32 || a_t.ndim() != 2 ||
        b.ndim() != 2 || a_t.shape(1) != in || b.shape(0) != a_t.shape(0) || b.shape(1) != width) {
      std::ostringstream message;
      message << "factor pair " << i / 2 << " is aT " << a_t.shape() << " " << a_t.dtype() << ", b "
              << b.shape() << " " << b.dtype() << "; expected float32 aT [r, " << in
              << "] and b [r, " << width << "]";
      reject(kOp, message.str());
    }
  }
  for (const auto& term : terms)
    if (term.row_begin < 0 || term.row_end > rows || term.row_begin > term.row_end ||
        term.factors < 0 || 2 * static_cast<std::size_t>(term.factors) >= factors.size())
      reject(kOp, "a term names rows or factors that do not exist");
  auto fallback = [terms, s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{
        stock_low_rank_update(in[0], in[1], {in.begin() + 2, in.end()}, terms, s)};
  };
  auto stream = mx::to_stream(s);
  std::vector<mx::array> inputs{x, y};
  inputs.insert(inputs.end(), factors.begin(), factors.end());
  if (stream.device != mx::Device::cpu) return fallback(inputs)[0];
  return mx::array(y.shape(), y.dtype(),
                   std::make_shared<LowRankUpdateFast>(stream, fallback, terms), inputs);
}

void eager::low_rank_update(const mx::array& x, const mx::array& y,
                            const std::vector<mx::array>& factors,
                            const std::vector<LowRankTerm>& terms, mx::array& out) {
  update_rows(x, y, factors, terms, out);
}

}  // namespace mlx_cpp::kernels
