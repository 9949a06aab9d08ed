#pragma once
// Which SIMD level the CPU kernels use. The default is everything the CPU
// has; a lower level runs, on one machine, the kernels another CPU would
// take (a Zen 4 has no AVX512-FP16: `--isa avx512-bf16`), for benchmarks and
// for checking a result against a slower path.
#include <string>

namespace mlx_cpp {

// "native" (or empty) keeps the detected level; a level name
// (kernels::level_names()) caps it. An unknown name, or a level above what
// this CPU has, throws Error naming the choices.
void select_instruction_set(const std::string& name);

}  // namespace mlx_cpp
