#include "model/activations.h"

#include <mlx/compile.h>
#include <mlx/ops.h>

#include <cmath>
#include <limits>
#include <numbers>

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// A Python float meeting an array: a weak scalar that takes the array's dtype.
mx::array scalar_like(double value, const mx::array& like) {
  return mx::array(static_cast<float>(value), like.dtype());
}

std::vector<mx::array> swiglu_graph(const std::vector<mx::array>& inputs) {
  const auto& gate = inputs[0];
  auto silu = mx::multiply(gate, mx::sigmoid(gate));
  return {mx::multiply(silu, inputs[1])};
}

std::vector<mx::array> gelu_approx_graph(const std::vector<mx::array>& inputs) {
  const auto& x = inputs[0];
  auto half_x = mx::multiply(scalar_like(0.5, x), x);
  auto cubed = mx::power(x, mx::array(3, x.dtype()));
  auto inner = mx::add(x, mx::multiply(scalar_like(0.044715, x), cubed));
  auto scaled = mx::multiply(scalar_like(std::sqrt(2 / std::numbers::pi), x), inner);
  return {mx::multiply(half_x, mx::add(scalar_like(1.0, x), mx::tanh(scaled)))};
}

// mlx-lm's geglu (gemma4): gelu_approx(gate) * x as one compiled function.
std::vector<mx::array> geglu_graph(const std::vector<mx::array>& inputs) {
  return {mx::multiply(gelu_approx_graph({inputs[0]})[0], inputs[1])};
}

std::vector<mx::array> gelu_graph(const std::vector<mx::array>& inputs) {
  const auto& x = inputs[0];
  auto erf = mx::erf(mx::divide(x, scalar_like(std::sqrt(2.0), x)));
  return {mx::divide(mx::multiply(x, mx::add(scalar_like(1.0, x), erf)), scalar_like(2.0, x))};
}

std::vector<mx::array> silu_graph(const std::vector<mx::array>& inputs) {
  const auto& x = inputs[0];
  return {mx::multiply(x, mx::sigmoid(x))};
}

std::vector<mx::array> relu_squared_graph(const std::vector<mx::array>& inputs) {
  const auto& x = inputs[0];
  return {mx::square(mx::maximum(x, mx::array(0, x.dtype())))};
}

// mlx.nn.softplus: logaddexp(x, 0) with a weak 0.
mx::array softplus(const mx::array& x) {
  return mx::logaddexp(x, mx::array(0, x.dtype()));
}

std::vector<mx::array> xielu_graph(const std::vector<mx::array>& inputs) {
  const auto &x = inputs[0], &beta = inputs[3], &eps = inputs[4];
  auto alpha_p = softplus(inputs[1]);
  auto alpha_n = mx::add(beta, softplus(inputs[2]));
  auto linear = mx::multiply(beta, x);
  auto positive = mx::add(mx::multiply(alpha_p, mx::square(x)), linear);
  auto negative =
      mx::add(mx::multiply(mx::subtract(mx::expm1(mx::minimum(x, eps)), x), alpha_n), linear);
  return {mx::where(mx::greater(x, mx::array(0, x.dtype())), positive, negative)};
}

// mlx-lm's gated_delta.compute_g: the per-head decay
// exp(-exp(A_log) * softplus(a + dt_bias)) in float32.
std::vector<mx::array> delta_decay_graph(const std::vector<mx::array>& inputs) {
  const auto &a_log = inputs[0], &a = inputs[1], &dt_bias = inputs[2];
  auto rate = mx::negative(mx::exp(mx::astype(a_log, mx::float32)));
  return {mx::exp(mx::multiply(rate, softplus(mx::add(a, dt_bias))))};
}

// mlx-lm's activations.precise_swiglu: silu(gate) * x in float32, in h's dtype.
std::vector<mx::array> precise_swiglu_graph(const std::vector<mx::array>& inputs) {
  const auto &h = inputs[0], &gate = inputs[1], &x = inputs[2];
  auto gate32 = mx::astype(gate, mx::float32);
  auto silu = mx::multiply(gate32, mx::sigmoid(gate32));
  return {mx::astype(mx::multiply(silu, mx::astype(x, mx::float32)), h.dtype())};
}

std::vector<mx::array> clip_residual_graph(const std::vector<mx::array>& inputs) {
  const auto& x = inputs[0];
  const auto& y = inputs[1];
  if (x.dtype() != mx::float16) return {mx::add(x, y)};
  const float bound = 65504.0f;  // float16 max
  auto sum = mx::add(mx::astype(x, mx::float32), mx::astype(y, mx::float32));
  return {mx::astype(mx::clip(sum, mx::array(-bound), mx::array(bound)), mx::float16)};
}

}  // namespace

mx::array softcap(const mx::array& x, float cap) {
  const auto limit = mx::array(cap, x.dtype());
  return mx::multiply(mx::tanh(mx::divide(x, limit)), limit);
}

mx::array swiglu(const mx::array& gate, const mx::array& up) {
  static auto compiled = mx::compile(swiglu_graph, /*shapeless=*/true);
  return compiled({gate, up})[0];
}

mx::array geglu(const mx::array& gate, const mx::array& x) {
  static auto compiled = mx::compile(geglu_graph, /*shapeless=*/true);
  return compiled({gate, x})[0];
}

mx::array gelu_approx(const mx::array& x) {
  static auto compiled = mx::compile(gelu_approx_graph, /*shapeless=*/true);
  return compiled({x})[0];
}

mx::array gelu(const mx::array& x) {
  static auto compiled = mx::compile(gelu_graph, /*shapeless=*/true);
  return compiled({x})[0];
}

mx::array silu(const mx::array& x) {
  static auto compiled = mx::compile(silu_graph, /*shapeless=*/true);
  return compiled({x})[0];
}

mx::array relu_squared(const mx::array& x) {
  static auto compiled = mx::compile(relu_squared_graph, /*shapeless=*/true);
  return compiled({x})[0];
}

mx::array xielu(const mx::array& x, const mx::array& alpha_p, const mx::array& alpha_n,
                const mx::array& beta, const mx::array& eps) {
  static auto compiled = mx::compile(xielu_graph, /*shapeless=*/true);
  return compiled({x, alpha_p, alpha_n, beta, eps})[0];
}

mx::array delta_decay(const mx::array& a_log, const mx::array& a, const mx::array& dt_bias) {
  static auto compiled = mx::compile(delta_decay_graph, /*shapeless=*/true);
  return compiled({a_log, a, dt_bias})[0];
}

mx::array precise_swiglu(const mx::array& h, const mx::array& gate, const mx::array& x) {
  static auto compiled = mx::compile(precise_swiglu_graph, /*shapeless=*/true);
  return compiled({h, gate, x})[0];
}

mx::array clip_residual(const mx::array& x, const mx::array& y) {
  static auto compiled = mx::compile(clip_residual_graph, /*shapeless=*/true);
  return compiled({x, y})[0];
}

}  // namespace mlx_cpp
