#pragma once
// Which SIMD instructions the kernels may use. Detected once at run time
// (the binary is built for baseline x86-64); a limit lowers what is used,
// so that tests and benchmarks exercise on one machine the paths other
// CPUs take (`mlx-cpp --isa LEVEL`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlx_cpp::kernels {

// The vector width the kernels' code is compiled for.
enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

// What a limit names: levels in order, each allowing what the ones before
// allow and more. A level requires some extensions and allows others where
// the CPU has them (VBMI is used from avx512-vnni on, but Cascade Lake has
// VNNI without it).
//   scalar        no SIMD
//   avx2          AVX2, FMA, F16C (Haswell and later, Zen 1-3)
//   avx512        AVX-512 F, BW, VL, DQ (Skylake-X)
//   avx512-vnni   + VNNI (and VBMI where present): Cascade Lake, Ice Lake
//   avx512-bf16   + BF16: AMD Zen 4 and Zen 5, Cooper Lake
//   avx512-fp16   + FP16: Sapphire Rapids and later
enum class IsaLevel { scalar, avx2, avx512, avx512_vnni, avx512_bf16, avx512_fp16 };

// The AVX-512 extensions some kernels need.
enum class Extension { vnni, vbmi, bf16, fp16 };

// The highest level this CPU meets every requirement of.
IsaLevel detected_level();
// The level in force: min(detected, limit).
IsaLevel active_level();
void set_isa_limit(IsaLevel limit);

// The vector width of the level in force.
Isa active_isa();
// Whether the CPU has the extension and the level in force allows it.
bool extension_active(Extension extension);

const char* isa_name(Isa isa);
const char* level_name(IsaLevel level);
// "avx512-bf16" -> IsaLevel::avx512_bf16 ("native": the detected level);
// nullopt for an unknown name.
std::optional<IsaLevel> parse_level(std::string_view name);
// The names parse_level takes, for error messages: "scalar, avx2, ...".
std::string level_names();
// Every level from scalar up to the detected one.
std::vector<IsaLevel> available_levels();

// The CPU's model name (/proc/cpuinfo; "unknown CPU" where it says none)
// and, of the instruction-set extensions the kernels look for, those it
// has, for reports (`mlx-cpp bench`).
std::string cpu_model();
std::vector<std::string> cpu_feature_names();

}  // namespace mlx_cpp::kernels
