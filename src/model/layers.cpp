#include "model/layers.h"

#include <mlx/fast.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>

#include "kernels/kernels.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

std::optional<QuantizedTensor> load_quantized(WeightStore& weights,
                                              const QuantizationConfig& quantization,
                                              const std::string& path, int in_dims, int out_dims,
                                              const mx::Shape& leading) {
  auto params = quantization.for_module(path, in_dims, weights);
  if (!params) return std::nullopt;
  auto shape = [&](int columns) {
    auto full = leading;
    full.push_back(out_dims);
    full.push_back(columns);
    return full;
  };
  const int packed_columns = in_dims * params->bits / 32;
  const int groups = in_dims / params->group_size;
  QuantizedTensor tensor{
      weights.take(path + ".weight", shape(packed_columns), DtypeRule::packed_uint32),
      weights.take(path + ".scales", shape(groups)), weights.take(path + ".biases", shape(groups)),
      *params};
  // The kernels read both factors as one type; a mismatch would only fail
  // at the first generation.
  const size_t rank = leading.size() + 2;
  if (tensor.scales.ndim() == rank && tensor.biases.ndim() == rank &&
      tensor.scales.dtype() != tensor.biases.dtype())
    weights.report(path + ".scales has dtype " + dtype_name(tensor.scales.dtype()) + " but " +
                   path + ".biases has " + dtype_name(tensor.biases.dtype()) + "; they must match");
  return tensor;
}

namespace {
// The width the own kernels read a narrower width in, 0 where none: the
// codes are repacked at load (the same integers, so the same weights), 20%
// more bytes at 5 bits than a 5-bit kernel would read, and the int16
// kernels' speed instead of the stock op's (which decoded Qwen2.5-Coder
// 0.5B's 5-bit layers at 2.6 tokens/s on a 2-core AVX2 machine).
int kernel_width_for(int bits) {
  switch (bits) {
    case 2:
    case 3:
      return 4;
    case 5:
      return 6;
    default:
      return 0;
  }
}

// The own CPU kernels read the weights: the fast path, computing on the CPU.
// On the GPU they take MLX's kernels, which read MLX's layout at every width,
// so none of the CPU layouts below is made there.
bool cpu_kernels_read(KernelMode kernels) {
  return kernels == KernelMode::fast && mx::default_device() == mx::Device::cpu;
}

// On the fast path, weights of a width the kernels do not read are widened
// to one they do.
void widen_for_kernels(QuantizedTensor& q, KernelMode kernels) {
  const int wide = kernel_width_for(q.params.bits);
  if (!cpu_kernels_read(kernels) || wide == 0) return;
  q.packed = kernels::widen_quantized_codes(q.packed, q.params.bits, wide);
  q.params.bits = wide;
}

// The own kernel covers affine 4-, 6- and 8-bit weights; other widths stay
// stock.
bool runs_fast_kernel(const QuantizedTensor& q, KernelMode kernels) {
  return kernels == KernelMode::fast &&
         (q.params.bits == 4 || q.params.bits == 6 || q.params.bits == 8);
}

// Decode is bound by the bytes of weights read per token. Float32 scales and
// biases (the converter's exact form of GGUF K-quants) cost 2 bits per weight
// at group 32; the own kernels read them as float16 instead, 1 bit less. The
// rounding (2^-12 relative per factor) is far inside the 2^-9 per element of
// the bfloat16 activations; factors beyond float16's range keep float32.
void narrow_float32_factors(QuantizedTensor& q) {
  if (q.scales.dtype() != mx::float32) return;
  const float largest =
      mx::max(mx::maximum(mx::max(mx::abs(q.scales)), mx::max(mx::abs(q.biases)))).item<float>();
  if (!(largest <= 65504.0f)) return;  // float16's largest finite value
  q.scales = mx::astype(q.scales, mx::float16);
  q.biases = mx::astype(q.biases, mx::float16);
  mx::eval(q.scales, q.biases);
}

// 4-, 6- and 8-bit projections with a multiple of 16 output rows go
// row-interleaved where the CPU has the kernels that read that layout: 16
// rows per vector lane set, no per-row scale loads or horizontal sums in
// decode (SmolLM2's 576-wide rows: 1.6-2.5x the weights per second on one
// core).
void interleave_rows_where_it_pays(QuantizedTensor& q) {
  if (!kernels::row_interleaving_pays(q.params.bits, q.packed.shape(0))) return;
  auto interleaved =
      kernels::to_row_interleaved(q.kernel_weights(), q.params.group_size, q.params.bits);
  q.packed = interleaved.w;
  q.scales = interleaved.scales;
  q.biases = interleaved.biases;
  q.layout = interleaved.layout;
}

mx::array quantized_projection(const mx::array& x, const QuantizedTensor& q, KernelMode kernels) {
  if (runs_fast_kernel(q, kernels))
    return kernels::quantized_matmuls_fast(x, {q.kernel_weights()}, q.params.group_size,
                                           q.params.bits, kActivationPrecision,
                                           kPrefillArithmetic)[0];
  return mx::quantized_matmul(x, q.packed, q.scales, q.biases, /*transpose=*/true,
                              q.params.group_size, q.params.bits, q.params.mode);
}

// x @ Wᵀ (+ bias) for float weights. The fast path widens them to float32
// for sgemm or the own decode kernel (kernels::dense_matmul_fast); the
// stock path is mlx.nn.Linear's: addmm(bias, x, Wᵀ) with a bias.
mx::array dense_projection(const mx::array& x, const mx::array& w,
                           const std::optional<mx::array>& bias, KernelMode kernels) {
  if (cpu_kernels_read(kernels) && kernels::dense_matmul_takes(x, w)) {
    auto y = kernels::dense_matmul_fast(x, w);
    return bias ? mx::add(y, *bias) : y;
  }
  if (bias) return mx::addmm(*bias, x, mx::transpose(w));
  return mx::matmul(x, mx::transpose(w));
}
}  // namespace

Linear Linear::load(WeightStore& weights, const QuantizationConfig& quantization,
                    const std::string& path, int in_dims, int out_dims, bool has_bias,
                    KernelMode kernels) {
  Linear layer;
  layer.kernels_ = kernels;
  layer.in_dims_ = in_dims;
  layer.out_dims_ = out_dims;
  layer.quantized_ = load_quantized(weights, quantization, path, in_dims, out_dims);
  if (layer.quantized_) widen_for_kernels(*layer.quantized_, kernels);
  if (!layer.quantized_)
    layer.dense_ = weights.take(path + ".weight", mx::Shape{out_dims, in_dims});
  else if (layer.runs_fast_kernel() && cpu_kernels_read(kernels)) {
    narrow_float32_factors(*layer.quantized_);
    interleave_rows_where_it_pays(*layer.quantized_);
  }
  if (has_bias) layer.bias_ = weights.take(path + ".bias", mx::Shape{out_dims});
  return layer;
}

mx::array Linear::operator()(const mx::array& x, const RowAdapters& adapters) const {
  return adapters.apply_linear(adapter_site_, x, base(x), bias_, kernels_ == KernelMode::fast);
}

std::optional<mx::array> Linear::stock_weight() const {
  if (dense_) return dense_;
  const auto& q = *quantized_;
  if (q.layout != kernels::WeightLayout::mlx) return std::nullopt;
  return mx::dequantize(q.packed, q.scales, q.biases, q.params.group_size, q.params.bits,
                        q.params.mode);
}

mx::array Linear::base(const mx::array& x) const {
  if (quantized_) {
    auto y = quantized_projection(x, *quantized_, kernels_);
    return bias_ ? mx::add(y, *bias_) : y;
  }
  return dense_projection(x, *dense_, bias_, kernels_);
}

bool Linear::runs_fast_kernel() const {
  return quantized_ && mlx_cpp::runs_fast_kernel(*quantized_, kernels_);
}

size_t Linear::bytes() const {
  return (quantized_ ? quantized_->bytes() : dense_->nbytes()) + (bias_ ? bias_->nbytes() : 0);
}

std::vector<mx::array> Linear::apply_all(const mx::array& x,
                                         const std::vector<const Linear*>& layers,
                                         const RowAdapters& adapters) {
  auto same_fast_format = [&](const Linear* layer) {
    const auto& first = *layers.front();
    return layer->runs_fast_kernel() && first.quantized_ &&
           layer->quantized_->shares_kernel_call(*first.quantized_);
  };
  std::vector<mx::array> outputs;
  if (layers.size() < 2 || !std::all_of(layers.begin(), layers.end(), same_fast_format)) {
    for (const auto* layer : layers) outputs.push_back((*layer)(x, adapters));
    return outputs;
  }
  std::vector<kernels::QuantizedWeights> weights;
  for (const auto* layer : layers) weights.push_back(layer->quantized_->kernel_weights());
  const auto& params = layers.front()->quantized_->params;
  outputs = kernels::quantized_matmuls_fast(x, weights, params.group_size, params.bits,
                                            kActivationPrecision, kPrefillArithmetic);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->bias_) outputs[i] = mx::add(outputs[i], *layers[i]->bias_);
    outputs[i] =
        adapters.apply_linear(layers[i]->adapter_site_, x, outputs[i], layers[i]->bias_, true);
  }
  return outputs;
}

Embedding Embedding::load(WeightStore& weights, const QuantizationConfig& quantization,
                          const std::string& path, int vocab_size, int dims, KernelMode kernels) {
  Embedding layer;
  layer.kernels_ = kernels;
  layer.quantized_ = load_quantized(weights, quantization, path, dims, vocab_size);
  if (layer.quantized_) widen_for_kernels(*layer.quantized_, kernels);
  if (!layer.quantized_) layer.dense_ = weights.take(path + ".weight", mx::Shape{vocab_size, dims});
  // As a tied head the table is a decode step's largest matrix (SmolLM2:
  // 28 of its 98 MB): row-interleaved like the projections where that
  // pays. Lookups gather their rows back in MLX's layout (kernels::
  // gather_rows), so they still dequantize as the stock op does. The
  // factors keep their dtype: the lookup's values depend on it.
  else if (runs_fast_kernel(*layer.quantized_, kernels) && cpu_kernels_read(kernels))
    interleave_rows_where_it_pays(*layer.quantized_);
  return layer;
}

mx::array Embedding::lookup(const mx::array& ids) const {
  if (dense_) return mx::take(*dense_, ids, 0);
  const auto& q = *quantized_;
  const auto rows =
      kernels::gather_rows(q.kernel_weights(), ids, q.params.group_size, q.params.bits);
  return mx::dequantize(rows.w, rows.scales, rows.biases, q.params.group_size, q.params.bits,
                        q.params.mode);
}

size_t Embedding::bytes() const {
  return quantized_ ? quantized_->bytes() : dense_->nbytes();
}

mx::array Embedding::as_linear(const mx::array& x) const {
  // A tied head: the table as a projection, as Linear's weights would be.
  if (dense_) return dense_projection(x, *dense_, std::nullopt, kernels_);
  return quantized_projection(x, *quantized_, kernels_);
}

Norm Norm::from_weight(mx::array weight, float eps, NormShape shape, KernelMode kernels) {
  Norm norm;
  norm.kernels_ = kernels;
  norm.eps_ = eps;
  norm.kind_ = shape.kind;
  norm.weight_ = std::move(weight);
  // gemma and nemotron compute 1 + w in the weight's dtype (a weak Python
  // scalar).
  if (shape.style == NormStyle::one_plus_weight)
    norm.weight_ = mx::add(mx::array(1.0f, norm.weight_.dtype()), norm.weight_);
  return norm;
}

Norm Norm::load(WeightStore& weights, const std::string& path, const mx::Shape& weight_shape,
                float eps, NormShape shape, KernelMode kernels) {
  auto norm = from_weight(weights.take(path + ".weight", weight_shape), eps, shape, kernels);
  if (shape.bias) norm.bias_ = weights.take(path + ".bias", weight_shape);
  return norm;
}

mx::array Norm::operator()(const mx::array& x) const {
  switch (kind_) {
    case NormKind::layer:
      return mx::fast::layer_norm(x, weight_, bias_, eps_);
    case NormKind::layer_then_weight:
      return mx::multiply(weight_, mx::fast::layer_norm(x, std::nullopt, std::nullopt, eps_));
    case NormKind::rms:
      break;
  }
  if (kernels_ == KernelMode::fast) return kernels::rms_norm_fast(x, weight_, eps_);
  return mx::fast::rms_norm(x, weight_, eps_);
}

std::pair<mx::array, mx::array> Norm::add_then_apply(const mx::array& x,
                                                     const mx::array& residual) const {
  if (kernels_ == KernelMode::fast && kind_ == NormKind::rms)
    return kernels::add_rms_norm_fast(x, residual, weight_, eps_);
  auto sum = mx::add(x, residual);
  return {sum, (*this)(sum)};
}

}  // namespace mlx_cpp
