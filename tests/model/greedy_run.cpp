#include "greedy_run.h"

#include <mlx/ops.h>

#include "engine/token_generator.h"

namespace mlx_cpp::testing {
namespace mx = mlx::core;

GreedyRun greedy_run(const LoadedModel& loaded, const std::vector<int>& prompt, int steps) {
  GreedyRun run;
  auto caches = loaded.model->make_caches();
  GenerationOptions options;
  options.max_tokens = steps;
  generate_tokens(
      *loaded.model, caches, prompt, options, {},
      [&](const GeneratedToken& token) {
        run.tokens.push_back(token.id);
        return true;
      },
      {}, [&](const mx::array& logits) { run.logits.push_back(mx::astype(logits, mx::float32)); });
  return run;
}

}  // namespace mlx_cpp::testing
