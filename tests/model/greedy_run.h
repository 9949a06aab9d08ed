#pragma once
// A greedy generation through the engine's decode loop, keeping every
// step's token and logits (as float32), for tests that compare two paths
// step by step.
#include <mlx/array.h>

#include <vector>

#include "engine/token_generator.h"
#include "model/language_model.h"

namespace mlx_cpp::testing {

struct GreedyRun {
  std::vector<int> tokens;
  std::vector<mlx::core::array> logits;  // float32, one per step
};

GreedyRun greedy_run(const LoadedModel& loaded, const std::vector<int>& prompt, int steps);
// With these options (max_tokens steps), the logits as the loop gives them
// (in the model's dtype).
GreedyRun greedy_run(const LoadedModel& loaded, const std::vector<int>& prompt,
                     const GenerationOptions& options);

}  // namespace mlx_cpp::testing
