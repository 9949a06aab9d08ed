#pragma once
// The weight of a depthwise causal convolution (lfm2's short convolution,
// qwen3_5's gated DeltaNet) as MLX's conv1d takes it, [channels, kernel, 1]:
// stored so by mlx-lm, or as transformers stores it, [channels, 1, kernel],
// which mlx-lm's sanitize transposes.
#include <mlx/array.h>

#include <string>

namespace mlx_cpp {

class WeightStore;

mlx::core::array load_depthwise_conv_weight(WeightStore& weights, const std::string& name,
                                            int channels, int kernel);

}  // namespace mlx_cpp
