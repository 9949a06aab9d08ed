#pragma once
// Token sampling with mlx-lm's semantics and order: temperature 0 is argmax;
// otherwise top_p → min_p → top_k filter the log-probabilities, then a
// categorical draw at the temperature, and the random key advances exactly
// as MLX's global key does after mx.random.seed(seed), so a seed reproduces
// mlx-lm's tokens. mlx-lm wraps the filters and the draw in mx.compile; here
// they run uncompiled (the same ops give the same numbers, which the parity
// tests check): with MLX 0.32.4, per-sampler compiled closures came with
// aborts at process exit in about half the runs of a seeded gemma3 parity
// test, and never without them. A race at exit between MLX's stream thread
// and its allocator was found later and closed
// (src/runtime/mlx_exit_order.cpp); whether it was the same fault, so that
// compiling would now be safe, has not been tested.
#include <mlx/array.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp {

struct SamplerOptions {
  float temperature = 0.0f;
  float top_p = 1.0f;  // active when 0 < top_p < 1
  float min_p = 0.0f;  // active when > 0
  int min_tokens_to_keep = 1;
  int top_k = 0;                 // active when > 0
  std::optional<uint64_t> seed;  // none: seeded from the clock
};

// Throws Error naming the option for out-of-range values.
void validate_sampler_options(const SamplerOptions& options, int vocab_size);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);
  // logprobs: [1, vocab] → token ids [1] (lazy).
  mlx::core::array operator()(const mlx::core::array& logprobs);
  bool greedy() const { return options_.temperature == 0; }

  // The parts of a draw (temperature > 0; operator() is draw(draw_weights)),
  // which speculative sampling also uses apart: the log-weights a draw
  // takes from logprobs [1, vocab] (filtered, scaled by the temperature,
  // not normalized), a draw from such log-weights, and a uniform number in
  // [0, 1) [1]. Draws and uniforms advance the key alike.
  mlx::core::array draw_weights(const mlx::core::array& logprobs) const;
  mlx::core::array draw(const mlx::core::array& weights);
  mlx::core::array uniform();

 private:
  using Graph = std::function<std::vector<mlx::core::array>(const std::vector<mlx::core::array>&)>;
  mlx::core::array next_draw_key();

  SamplerOptions options_;
  std::vector<Graph> filters_;
  mlx::core::array key_;
};

}  // namespace mlx_cpp
