// quantized_matmul_fast vs mlx::core::quantized_matmul on the projection
// shapes of SmolLM2-135M (K=576; 4-bit and 8-bit, group 32) and
// Qwen2.5-1.5B (K=1536 and K=8960; 4-bit, group 64), for one row (decode)
// and 512 rows (prefill). bfloat16 activations and scales, as in the
// published MLX checkpoints, plus two float32 shapes, the decode shapes
// with 8-bit, bfloat16 and int16 activations (int16 also as batched
// decode steps of 4 and 16 rows), and the prefill shapes in float16; the
// int16 decode (1, 4 and 16 rows) and half-precision prefill also on
// row-interleaved weights (the layout the models load where the CPU reads
// it), and Qwen's 6-bit
// output head and down_proj (Q4_K_M GGUF files keep those in Q6_K).
#include <string>

#include "bench_common.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels::bench {
namespace {

namespace mx = mlx::core;

struct Shape {
  const char* model;
  const char* layer;
  int N, K, bits, group_size;
};

const Shape kShapes[] = {
    {"smollm2", "q_proj", 576, 576, 4, 32},
    {"smollm2", "k_proj", 192, 576, 4, 32},
    {"smollm2", "gate_proj", 1536, 576, 4, 32},
    {"smollm2", "lm_head", 49152, 576, 4, 32},
    {"smollm2", "q_proj", 576, 576, 8, 32},
    {"smollm2", "k_proj", 192, 576, 8, 32},
    {"smollm2", "gate_proj", 1536, 576, 8, 32},
    {"smollm2", "lm_head", 49152, 576, 8, 32},
    {"qwen2.5-1.5b", "q_proj", 1536, 1536, 4, 64},
    {"qwen2.5-1.5b", "k_proj", 256, 1536, 4, 64},
    {"qwen2.5-1.5b", "gate_proj", 8960, 1536, 4, 64},
    {"qwen2.5-1.5b", "down_proj", 1536, 8960, 4, 64},
    {"qwen2.5-1.5b", "down_proj", 1536, 8960, 6, 64},
    {"qwen2.5-1.5b", "lm_head", 151936, 1536, 6, 64},
};

void register_shape(const Shape& shape, int M, mx::Dtype dtype,
                    ActivationPrecision precision = ActivationPrecision::float32,
                    PrefillArithmetic prefill = PrefillArithmetic::float32,
                    WeightLayout layout = WeightLayout::mlx) {
  const char* activations = precision == ActivationPrecision::int8       ? "int8/"
                            : precision == ActivationPrecision::bfloat16 ? "bf16act/"
                            : precision == ActivationPrecision::int16    ? "int16act/"
                            : prefill == PrefillArithmetic::half         ? "fp16/"
                                                                         : "";
  std::string name = std::string("qmm/") + (dtype == mx::float32 ? "f32/" : "") + activations +
                     shape.model + "/" + shape.layer + "/N" + std::to_string(shape.N) + "_K" +
                     std::to_string(shape.K) + "/q" + std::to_string(shape.bits) + "g" +
                     std::to_string(shape.group_size) + "/M" + std::to_string(M) +
                     (layout == WeightLayout::row_interleaved ? "/rows" : "");
  register_pair(
      name,
      [shape, M, dtype, precision, prefill, layout] {
        auto w = random_input({shape.N, shape.K}, dtype, 0.05f, 1);
        auto q = mx::quantize(w, shape.group_size, shape.bits);
        mx::eval(q);
        QuantizedWeights fast_weights{q[0], q[1], q[2]};
        if (layout == WeightLayout::row_interleaved)
          fast_weights = to_row_interleaved(fast_weights, shape.group_size, shape.bits);
        // Decode with int16 activations takes M > 1 as M sequences of one
        // token each ([M, 1, K]: a batched decode step).
        const bool batched = precision == ActivationPrecision::int16 && M > 1;
        auto x = batched ? random_input({M, 1, shape.K}, dtype, 1.0f, 2)
                         : random_input({M, shape.K}, dtype, 1.0f, 2);
        int g = shape.group_size, b = shape.bits;
        return OpPair{
            [=] { return mx::quantized_matmul(x, q[0], q[1], q[2], true, g, b); },
            [=] { return quantized_matmuls_fast(x, {fast_weights}, g, b, precision, prefill)[0]; }};
      },
      // The stock side of a row-interleaved pair is its MLX-layout pair's.
      M > 64 || layout == WeightLayout::row_interleaved);
}

[[maybe_unused]] const bool registered = [] {
  for (int M : {1, 512}) {
    for (const auto& shape : kShapes) register_shape(shape, M, mx::bfloat16);
  }
  // Decode with activations rounded to bfloat16 (bfloat16 dot products for
  // 4-bit weights), as the model's fast path runs it, and with 8-bit
  // activations (integer dot products), which it does not use.
  for (const auto& shape : kShapes)
    register_shape(shape, 1, mx::bfloat16, ActivationPrecision::bfloat16);
  for (const auto& shape : kShapes)
    register_shape(shape, 1, mx::bfloat16, ActivationPrecision::int8);
  // The model's modes: int16 decode activations, float16 prefill.
  for (const auto& shape : kShapes)
    register_shape(shape, 1, mx::bfloat16, ActivationPrecision::int16);
  // Batched decode steps (B sequences of one token): what a row costs in a
  // batch against alone.
  for (int M : {4, 16}) {
    for (const auto& shape : kShapes)
      register_shape(shape, M, mx::bfloat16, ActivationPrecision::int16);
  }
  for (const auto& shape : kShapes) {
    register_shape(shape, 512, mx::bfloat16, ActivationPrecision::float32, PrefillArithmetic::half);
  }
  for (const auto& shape : kShapes) {
    if (!row_interleaving_pays(shape.bits, shape.N)) continue;
    // A batched decode step or a speculative verify of M tokens runs the
    // interleaved kernel on M rows.
    for (int M : {1, 4, 16}) {
      register_shape(shape, M, mx::bfloat16, ActivationPrecision::int16, PrefillArithmetic::float32,
                     WeightLayout::row_interleaved);
    }
    register_shape(shape, 512, mx::bfloat16, ActivationPrecision::float32, PrefillArithmetic::half,
                   WeightLayout::row_interleaved);
  }
  // float32 activations and scales take MLX's vectorized (8-wide, float
  // accumulating) CPU path instead of the scalar bfloat16 one.
  for (int M : {1, 512}) {
    register_shape(kShapes[0], M, mx::float32);   // smollm2 q_proj 4-bit
    register_shape(kShapes[10], M, mx::float32);  // qwen2.5 gate_proj
  }
  return true;
}();

}  // namespace
}  // namespace mlx_cpp::kernels::bench
