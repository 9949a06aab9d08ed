#include "bench_common.h"

#include <memory>

namespace mlx_cpp::kernels::bench {

namespace mx = mlx::core;

namespace {

void run_op(benchmark::State& state, const OpBuilder& build) {
  mx::eval(build());  // warm-up: allocations, thread pool start
  for (auto _ : state) {
    auto out = build();
    mx::eval(out);
  }
}

}  // namespace

void register_pair(const std::string& name, std::function<OpPair()> setup, bool slow_stock) {
  // Inputs are created lazily on first use and shared by both benchmarks,
  // so filtered runs do not pay for shapes they skip.
  auto pair = std::make_shared<std::unique_ptr<OpPair>>();
  auto get = [pair, setup]() -> OpPair& {
    if (!*pair) *pair = std::make_unique<OpPair>(setup());
    return **pair;
  };
  auto* stock = benchmark::RegisterBenchmark(
      (name + "/stock").c_str(), [get](benchmark::State& state) { run_op(state, get().stock); });
  stock->Unit(benchmark::kMicrosecond)->UseRealTime();
  if (slow_stock) stock->Iterations(1)->Repetitions(1);
  benchmark::RegisterBenchmark((name + "/fast").c_str(),
                               [get](benchmark::State& state) { run_op(state, get().fast); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

mx::array random_input(const mx::Shape& shape, mx::Dtype dtype, float scale, int seed) {
  auto x = mx::astype(
      mx::multiply(mx::random::normal(shape, mx::float32, 0.0f, 1.0f, mx::random::key(seed)),
                   mx::array(scale)),
      dtype);
  mx::eval(x);
  return x;
}

}  // namespace mlx_cpp::kernels::bench
