#pragma once
// The leaf layers of the dense transformer, composed exactly as mlx.nn
// composes them so the stock path is bit-exact with mlx-lm: a linear layer
// (dense or affine-quantized, with an optional additive bias), an embedding
// (dense or quantized, usable as a tied output projection) and the norms.
#include <mlx/array.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "model/quantization.h"
#include "model/row_adapters.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class WeightStore;

// How the own quantized kernels run the model's projections. Decode rounds
// activations to int16 per group (16-bit integer dot products, 1.4-1.9x the
// bfloat16 kernel's weights per second at 4 bits, ~2x the float kernel's
// at 6; error at most 2^-16 of the group's largest |x|). bfloat16
// activations (2^-9 relative per element) were the previous mode.
// int8 activations made the real SmolLM2 answer "What is the capital of
// France?" with nonsense in chat (outlier channels zero the rest of their
// 32-blocks), although the synthetic models stayed within the fidelity
// bounds.
inline constexpr auto kActivationPrecision = kernels::ActivationPrecision::int16;
// Prefill multiplies in half precision where the CPU has it (kernels.h):
// float16 on AVX512-FP16 (1.3-1.5x the float32 GEMM's multiply-adds per
// second), bfloat16 against the weights' exact codes on AVX512-BF16.
inline constexpr auto kPrefillArithmetic = kernels::PrefillArithmetic::half;

struct QuantizedTensor {
  mlx::core::array packed;  // uint32 [rows, in * bits / 32] (MLX's layout)
  mlx::core::array scales;  // [rows, in / group_size]
  mlx::core::array biases;  // [rows, in / group_size]
  QuantizationParams params;
  // Fast path only: row-interleaved for the own kernels (kernels.h); packed
  // is then uint8 [rows, in x bits / 8] and the factors are reordered.
  kernels::WeightLayout layout = kernels::WeightLayout::mlx;

  kernels::QuantizedWeights kernel_weights() const { return {packed, scales, biases, layout}; }
  size_t bytes() const { return packed.nbytes() + scales.nbytes() + biases.nbytes(); }
  // Whether one quantized_matmuls_fast call can take both (same width,
  // group size and layout).
  bool shares_kernel_call(const QuantizedTensor& other) const {
    return params.bits == other.params.bits && params.group_size == other.params.group_size &&
           layout == other.layout;
  }
};

class Linear {
 public:
  // Loads <path>.weight (+ .scales/.biases when quantized, + .bias when
  // has_bias) for a [out_dims, in_dims] projection.
  static Linear load(WeightStore& weights, const QuantizationConfig& quantization,
                     const std::string& path, int in_dims, int out_dims, bool has_bias,
                     KernelMode kernels = KernelMode::stock);

  // x: [B, L, in_dims] → [B, L, out_dims], each row's adapter updates
  // added (row_adapters.h).
  mlx::core::array operator()(const mlx::core::array& x, const RowAdapters& adapters) const;
  // The projection alone, without adapters: x [..., in_dims] → [..., out_dims].
  mlx::core::array base(const mlx::core::array& x) const;
  bool quantized() const { return quantized_.has_value(); }
  int input_dims() const { return in_dims_; }
  int output_dims() const { return out_dims_; }
  // Whether its projection runs on the own quantized kernel (quantized
  // weights of a width it covers, fast kernels).
  bool runs_fast_kernel() const;
  const std::optional<QuantizedTensor>& quantized_tensor() const { return quantized_; }
  const std::optional<mlx::core::array>& bias() const { return bias_; }
  // Bytes of its parameters as held in memory (what one token's pass reads).
  size_t bytes() const;

  // Several projections of one x, as each layer(x): with fast kernels and
  // quantized weights of one format, a single kernel call for all of them
  // (one graph node, x prepared once); otherwise one call each.
  static std::vector<mlx::core::array> apply_all(const mlx::core::array& x,
                                                 const std::vector<const Linear*>& layers,
                                                 const RowAdapters& adapters);
  // Which adapter site it is (row_adapters.h); -1 until the model numbers it.
  int adapter_site() const { return adapter_site_; }
  void set_adapter_site(int site) { adapter_site_ = site; }
  // [out, in] as the stock op multiplies it (quantized weights
  // dequantized), or nullopt where the fast path keeps the weights in a
  // form of its own.
  std::optional<mlx::core::array> stock_weight() const;

 private:
  std::optional<mlx::core::array> dense_;  // [out, in]
  std::optional<QuantizedTensor> quantized_;
  std::optional<mlx::core::array> bias_;  // [out]
  KernelMode kernels_ = KernelMode::stock;
  int in_dims_ = 0, out_dims_ = 0;
  int adapter_site_ = -1;
};

class Embedding {
 public:
  static Embedding load(WeightStore& weights, const QuantizationConfig& quantization,
                        const std::string& path, int vocab_size, int dims,
                        KernelMode kernels = KernelMode::stock);

  // ids: int [B, L] → [B, L, dims]
  mlx::core::array lookup(const mlx::core::array& ids) const;
  // Tied output projection: x [..., dims] → [..., vocab]
  mlx::core::array as_linear(const mlx::core::array& x) const;
  // Bytes of the whole table (what as_linear reads).
  size_t bytes() const;

 private:
  std::optional<mlx::core::array> dense_;  // [vocab, dims]
  std::optional<QuantizedTensor> quantized_;
  KernelMode kernels_ = KernelMode::stock;
};

// A norm as the checkpoint's module computes it (NormKind): RMSNorm,
// LayerNorm (with or without a bias), or a weightless LayerNorm times a
// weight. Only RMSNorm has an own kernel; the others run MLX's ops on both
// paths.
struct NormShape {
  NormKind kind = NormKind::rms;
  NormStyle style = NormStyle::weight;
  bool bias = false;
};

class Norm {
 public:
  // Loads <path>.weight of `weight_shape` (and <path>.bias).
  static Norm load(WeightStore& weights, const std::string& path,
                   const mlx::core::Shape& weight_shape, float eps, NormShape shape,
                   KernelMode kernels = KernelMode::stock);
  static Norm load(WeightStore& weights, const std::string& path, int dims, float eps,
                   NormShape shape, KernelMode kernels = KernelMode::stock) {
    return load(weights, path, mlx::core::Shape{dims}, eps, shape, kernels);
  }
  // From a weight already loaded (a stack of per-head weights).
  static Norm from_weight(mlx::core::array weight, float eps, NormShape shape,
                          KernelMode kernels = KernelMode::stock);
  mlx::core::array operator()(const mlx::core::array& x) const;
  // {x + residual, norm(x + residual)}: one kernel call on the fast path.
  std::pair<mlx::core::array, mlx::core::array> add_then_apply(
      const mlx::core::array& x, const mlx::core::array& residual) const;
  size_t bytes() const { return weight_.nbytes() + (bias_ ? bias_->nbytes() : 0); }
  NormKind kind() const { return kind_; }
  const mlx::core::array& weight() const { return weight_; }
  float eps() const { return eps_; }

 private:
  mlx::core::array weight_ = mlx::core::array(0.0f);  // effective weight (1 + w for gemma)
  std::optional<mlx::core::array> bias_;
  NormKind kind_ = NormKind::rms;
  float eps_ = 1e-5f;
  KernelMode kernels_ = KernelMode::stock;
};

// Loads quantized tensors of a module when the quantization rules say so:
// [leading..., out_dims, packed columns] (`leading` holds the experts of a
// stacked projection).
std::optional<QuantizedTensor> load_quantized(WeightStore& weights,
                                              const QuantizationConfig& quantization,
                                              const std::string& path, int in_dims, int out_dims,
                                              const mlx::core::Shape& leading = {});

}  // namespace mlx_cpp
