#pragma once
// The leaf layers of the dense transformer, composed exactly as mlx.nn
// composes them so the stock path is bit-exact with mlx-lm: a linear layer
// (dense or affine-quantized, with an optional additive bias), an embedding
// (dense or quantized, usable as a tied output projection) and RMSNorm.
#include <mlx/array.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/quantization.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class WeightStore;

struct QuantizedTensor {
  mlx::core::array packed;  // uint32 [rows, in * bits / 32]
  mlx::core::array scales;  // [rows, in / group_size]
  mlx::core::array biases;  // [rows, in / group_size]
  QuantizationParams params;
};

class Linear {
 public:
  // Loads <path>.weight (+ .scales/.biases when quantized, + .bias when
  // has_bias) for a [out_dims, in_dims] projection.
  static Linear load(WeightStore& weights, const QuantizationConfig& quantization,
                     const std::string& path, int in_dims, int out_dims, bool has_bias,
                     KernelMode kernels = KernelMode::stock);

  // x: [..., in_dims] → [..., out_dims]
  mlx::core::array operator()(const mlx::core::array& x) const;
  bool quantized() const { return quantized_.has_value(); }
  // Bytes of its parameters as held in memory (what one token's pass reads).
  size_t bytes() const;

  // Several projections of one x, as each layer(x): with fast kernels and
  // quantized weights of one format, a single kernel call for all of them
  // (one graph node, x prepared once); otherwise one call each.
  static std::vector<mlx::core::array> apply_all(const mlx::core::array& x,
                                                 const std::vector<const Linear*>& layers);

 private:
  std::optional<mlx::core::array> dense_;  // [out, in]
  std::optional<QuantizedTensor> quantized_;
  std::optional<mlx::core::array> bias_;  // [out]
  KernelMode kernels_ = KernelMode::stock;
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

class RmsNorm {
 public:
  static RmsNorm load(WeightStore& weights, const std::string& path, int dims, float eps,
                      NormStyle style, KernelMode kernels = KernelMode::stock);
  mlx::core::array operator()(const mlx::core::array& x) const;
  // {x + residual, norm(x + residual)}: one kernel call on the fast path.
  std::pair<mlx::core::array, mlx::core::array> add_then_apply(
      const mlx::core::array& x, const mlx::core::array& residual) const;
  size_t bytes() const { return weight_.nbytes(); }

 private:
  mlx::core::array weight_ = mlx::core::array(0.0f);  // effective weight (1 + w for gemma)
  float eps_ = 1e-5f;
  KernelMode kernels_ = KernelMode::stock;
};

// Loads quantized tensors of a module when the quantization rules say so.
std::optional<QuantizedTensor> load_quantized(WeightStore& weights,
                                              const QuantizationConfig& quantization,
                                              const std::string& path, int in_dims, int out_dims);

}  // namespace mlx_cpp
