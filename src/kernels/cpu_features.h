#pragma once
// Which SIMD instruction set the kernels may use. Detected once at run time
// (the binary is built for baseline x86-64); tests and benchmarks may lower
// the limit to exercise the portable paths on a machine that has more.

#include <string>
#include <vector>

namespace mlx_cpp::kernels {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

// The best level this CPU supports (AVX2 needs FMA and F16C; AVX-512 needs
// F, BW, VL and DQ).
Isa detected_isa();

// The level kernels use: min(detected, limit). The limit defaults to the
// detected level.
Isa active_isa();
void set_isa_limit(Isa limit);

const char* isa_name(Isa isa);

// The CPU's model name (/proc/cpuinfo; "unknown CPU" where it says none)
// and, of the instruction-set extensions the kernels look for, those it
// has, for reports (`mlx-cpp bench`).
std::string cpu_model();
std::vector<std::string> cpu_feature_names();

}  // namespace mlx_cpp::kernels
