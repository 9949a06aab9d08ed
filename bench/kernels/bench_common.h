#pragma once
// Shared pieces of the kernel benchmarks: a pair registration that runs the
// stock op and the fast op under names differing only in their last part
// ("/stock" vs "/fast"), and the ratio table printed after the run.
#include <benchmark/benchmark.h>
#include <mlx/mlx.h>

#include <functional>
#include <string>

namespace mlx_cpp::kernels::bench {

// Builds the op's output for one iteration; the harness evaluates it.
using OpBuilder = std::function<mlx::core::array()>;

// Registers `<name>/stock` and `<name>/fast`. `setup` runs once per
// benchmark (outside timing) and returns the two builders.
struct OpPair {
  OpBuilder stock;
  OpBuilder fast;
};
// `slow_stock`: the stock op takes seconds per call (the scalar bfloat16
// CPU path at 512 rows), so it runs one iteration, one repetition.
void register_pair(const std::string& name, std::function<OpPair()> setup, bool slow_stock = false);

// Random normal array, evaluated.
mlx::core::array random_input(const mlx::core::Shape& shape, mlx::core::Dtype dtype, float scale,
                              int seed);

}  // namespace mlx_cpp::kernels::bench
