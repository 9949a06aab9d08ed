// What a speculative verify costs on this machine: the time of one forward
// of L consecutive tokens of one sequence, each computed as its own decode
// step (engine/speculative/speculative_step.h), for L = 1..9, against one
// plain decode step (the fused one-token forward), after a 256-token
// context (or CONTEXT tokens). Best of several runs each.
//
// usage: verify_cost MODEL_DIR [CONTEXT]
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "engine/model_runtime.h"

namespace mx = mlx::core;
using namespace mlx_cpp;

namespace {

constexpr int kDefaultContext = 256;
constexpr int kRuns = 6;

double seconds_of(const std::function<mx::array()>& forward, CacheList& caches, int tokens) {
  double best = 1e9;
  for (int run = 0; run < kRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    mx::eval(forward());
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (auto& cache : caches) cache->trim(tokens);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: verify_cost MODEL_DIR [CONTEXT]\n");
    return 2;
  }
  const int context_tokens = argc == 3 ? std::atoi(argv[2]) : kDefaultContext;
  if (context_tokens < 1) {
    std::fprintf(stderr, "verify_cost: CONTEXT must be a positive number of tokens\n");
    return 2;
  }
  auto runtime = ModelRuntime::open(argv[1], {0, KernelMode::fast});
  const auto& model = runtime->model();
  std::vector<int> context(context_tokens);
  for (int i = 0; i < context_tokens; ++i) context[i] = 100 + (i * 7) % 1000;
  auto caches = model.make_caches();
  model.forward(mx::array(context.data(), {1, context_tokens}, mx::int32), caches);
  evaluate_cache_state(caches);
  std::vector<int> tokens(9, 500);
  const double plain = seconds_of(
      [&] {
        return model.forward(mx::array(tokens.data(), {1, 1}, mx::int32), caches);
      },
      caches, 1);
  std::printf("plain decode step: %.2f ms\n", plain * 1e3);
  for (int length = 1; length <= 9; ++length) {
    const double verify = seconds_of(
        [&] {
          ForwardBatch batch;
          batch.consecutive_positions = true;
          batch.rows.assign(length, BatchRow{&caches, std::nullopt});
          return model.forward_batch(mx::array(tokens.data(), {length, 1}, mx::int32), batch);
        },
        caches, length);
    std::printf("verify %d tokens: %.2f ms = %.2f plain steps\n", length, verify * 1e3,
                verify / plain);
  }
  return 0;
}
