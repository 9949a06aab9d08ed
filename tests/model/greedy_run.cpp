#include "greedy_run.h"

#include <mlx/ops.h>

#include "engine/token_generator.h"

namespace mlx_cpp::testing {
namespace mx = mlx::core;

GreedyRun greedy_run(const LoadedModel& loaded, const std::vector<int>& prompt,
                     const GenerationOptions& options) {
  GreedyRun run;
  auto caches = loaded.model->make_caches();
  generate_tokens(
      *loaded.model, caches, prompt, options, {},
      [&](const GeneratedToken& token) {
        run.tokens.push_back(token.id);
        return true;
      },
      {}, [&](const mx::array& logits) { run.logits.push_back(logits); });
  return run;
}

GreedyRun greedy_run(const LoadedModel& loaded, const std::vector<int>& prompt, int steps) {
  GenerationOptions options;
  options.max_tokens = steps;
  auto run = greedy_run(loaded, prompt, options);
  for (auto& logits : run.logits) logits = mx::astype(logits, mx::float32);
  return run;
}

}  // namespace mlx_cpp::testing
