#pragma once
// Shared plumbing for the kernels' MLX primitives.
//
// Every kernel is an mlx::core::Primitive with a CPU implementation and a
// fallback composed from stock MLX ops with the same semantics. The fallback
// serves differentiation (vjp/jvp) and non-CPU streams; the op functions in
// kernels.h validate inputs and pick the primitive or the fallback.
//
// Evaluation follows MLX's CPU encoder convention: eval_cpu runs on the
// thread that evaluates the graph, allocates the outputs, and enqueues the
// computation on the stream's CPU command encoder, which runs it in order on
// the stream's scheduler thread; MLX keeps the input buffers alive until it
// has run.
#include <mlx/allocator.h>
#include <mlx/array.h>
#include <mlx/backend/cpu/encoder.h>
#include <mlx/primitives.h>
#include <mlx/utils.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/qmm_kernels.h"

namespace mlx_cpp::kernels {

class FallbackPrimitive : public mlx::core::Primitive {
 public:
  using Arrays = std::vector<mlx::core::array>;
  using Fallback = std::function<Arrays(const Arrays&)>;

  FallbackPrimitive(mlx::core::Stream stream, Fallback fallback)
      : Primitive(stream), fallback_(std::move(fallback)) {}

  void eval_gpu(const Arrays& inputs, Arrays& outputs) override;
  Arrays jvp(const Arrays& primals, const Arrays& tangents,
             const std::vector<int>& argnums) override;
  Arrays vjp(const Arrays& primals, const Arrays& cotangents, const std::vector<int>& argnums,
             const Arrays& outputs) override;

 protected:
  // Allocates `outputs` and enqueues compute(inputs, outputs) on this
  // primitive's stream. compute() sees the first `row_contiguous_inputs`
  // inputs row-contiguous (copied here when they are not); later ones with
  // their own strides, which compute() then reads.
  void dispatch(const Arrays& inputs, Arrays& outputs,
                std::function<void(const Arrays&, Arrays&)> compute,
                std::size_t row_contiguous_inputs = SIZE_MAX);

  Fallback fallback_;
};

// The kernels' element type for an MLX float dtype (float32 for others).
qmm::ScalarType scalar_type_of(mlx::core::Dtype dtype);

// Whether x [..., K] has the shape of a decode step: one token of each of
// B sequences ([B, 1, K], a batched step or a verify's rows), or at most
// qmm::kGemvMaxRows rows in all. Matmuls give such x their row kernels,
// whose every row comes out as it would alone, at any B.
bool decode_shaped(const mlx::core::array& x);

// Throws std::invalid_argument("[op] message").
[[noreturn]] void reject(const char* op, const std::string& message);

bool is_float_dtype(mlx::core::Dtype dtype);

}  // namespace mlx_cpp::kernels
