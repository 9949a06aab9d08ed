#pragma once
// Rotary position embeddings as mlx-lm builds them (rope_utils.py): every
// variant reduces to one mlx::core::fast::rope call with either a base or a
// precomputed frequency table, plus an optional input scale on the rotated
// part (yarn's mscale ratio, longrope's attention factor).
#include <mlx/array.h>

#include <nlohmann/json.hpp>
#include <optional>

namespace mlx_cpp {

struct RotaryEmbedding {
  int dims = 0;
  bool traditional = false;
  std::optional<float> base;              // set when freqs is not
  float scale = 1.0f;                     // position scale (linear: 1/factor)
  std::optional<mlx::core::array> freqs;  // [dims/2] float32 periods
  std::optional<float> input_scale;       // multiplies x[..., :dims] first
  bool fast_kernel = false;               // own rope kernel instead of fast::rope
  // Dynamic NTK scaling (rope_type "dynamic"): past max_positions tokens
  // the base grows with the sequence, recomputed at every call.
  struct Dynamic {
    double factor = 1.0;
    int max_positions = 0;
  };
  std::optional<Dynamic> dynamic;

  // x: [B, heads, L, head_dim]; positions start at offset. An embedding of
  // 0 dims rotates nothing (a layer without positions, smollm3's NoPE).
  mlx::core::array apply(const mlx::core::array& x, int offset) const;
};

// rope with base ** (arange(0, dims, 2) / dims) given as a frequency table
// (hunyuan's form; rounds otherwise than giving fast::rope the base).
RotaryEmbedding make_frequency_table_rope(int dims, float base, bool traditional);

// Builds the embedding for one attention layer. `scaling` is the config's
// rope_scaling object (or null); supported types: default, linear, llama3,
// dynamic, yarn (and its deepseek/telechat3 aliases), longrope / su,
// proportional (Gemma 4: a leading fraction of the dims turns). Others →
// Error.
RotaryEmbedding make_rotary_embedding(int dims, float base, bool traditional,
                                      const nlohmann::json& scaling,
                                      std::optional<int> max_position_embeddings);

}  // namespace mlx_cpp
