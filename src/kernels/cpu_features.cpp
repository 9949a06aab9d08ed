#include "kernels/cpu_features.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>
#include <utility>

#include "kernels/simd_target.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mlx_cpp::kernels {

namespace {

struct LevelInfo {
  IsaLevel level;
  const char* name;
  Isa isa;
};

constexpr LevelInfo kLevels[] = {
    {IsaLevel::scalar, "scalar", Isa::scalar},
    {IsaLevel::avx2, "avx2", Isa::avx2},
    {IsaLevel::avx512, "avx512", Isa::avx512},
    {IsaLevel::avx512_vnni, "avx512-vnni", Isa::avx512},
    {IsaLevel::avx512_bf16, "avx512-bf16", Isa::avx512},
    {IsaLevel::avx512_fp16, "avx512-fp16", Isa::avx512},
};

const LevelInfo& info(IsaLevel level) {
  return kLevels[static_cast<int>(level)];
}

// The level from which on an extension may be used.
IsaLevel allowed_from(Extension extension) {
  switch (extension) {
    case Extension::vnni:
    case Extension::vbmi:
      return IsaLevel::avx512_vnni;
    case Extension::bf16:
      return IsaLevel::avx512_bf16;
    case Extension::fp16:
      break;
  }
  return IsaLevel::avx512_fp16;
}

// The features the kernels look for, read from CPUID (and, for the AVX
// registers, whether the OS saves them: XCR0) rather than through
// __builtin_cpu_supports, whose feature names differ between compilers
// and versions (clang 14 has no "avx512fp16").
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512vbmi = false, avx512bf16 = false, avx512fp16 = false;
};

CpuFeatures read_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28);
  const bool fma = ecx & (1u << 12), f16c = ecx & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned xcr0 = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  // SSE and AVX state; AVX-512 adds the opmask and both halves of ZMM.
  const bool ymm_saved = (xcr0 & 0x6u) == 0x6u;
  const bool zmm_saved = ymm_saved && (xcr0 & 0xe0u) == 0xe0u;
  if (!ymm_saved) return f;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned leaf7_subleaves = eax;
  f.avx2 = ebx & (1u << 5);
  f.fma = fma;
  f.f16c = f16c;
  if (zmm_saved) {
    f.avx512f = ebx & (1u << 16);
    f.avx512dq = ebx & (1u << 17);
    f.avx512bw = ebx & (1u << 30);
    f.avx512vl = ebx & (1u << 31);
    f.avx512vbmi = ecx & (1u << 1);
    f.avx512vnni = ecx & (1u << 11);
    f.avx512fp16 = edx & (1u << 23);
    if (leaf7_subleaves >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      f.avx512bf16 = eax & (1u << 5);
    }
  }
#endif
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = read_cpu_features();
  return features;
}

bool cpu_has(Extension extension) {
  const auto& f = cpu_features();
  switch (extension) {
    case Extension::vnni:
      return f.avx512vnni;
    case Extension::vbmi:
      return f.avx512vbmi;
    case Extension::bf16:
      return f.avx512bf16;
    case Extension::fp16:  // only where its kernels are built
      return f.avx512fp16 && MLX_CPP_AVX512_FP16_KERNELS;
  }
  return false;
}

IsaLevel detect() {
  const auto& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (!avx2) return IsaLevel::scalar;
  if (!avx512) return IsaLevel::avx2;
  if (!cpu_has(Extension::vnni)) return IsaLevel::avx512;
  if (!cpu_has(Extension::bf16)) return IsaLevel::avx512_vnni;
  if (!cpu_has(Extension::fp16)) return IsaLevel::avx512_bf16;
  return IsaLevel::avx512_fp16;
}

std::atomic<int>& isa_limit() {
  static std::atomic<int> limit{static_cast<int>(IsaLevel::avx512_fp16)};
  return limit;
}

}  // namespace

IsaLevel detected_level() {
  static const IsaLevel level = detect();
  return level;
}

IsaLevel active_level() {
  const int limit = isa_limit().load(std::memory_order_relaxed);
  return static_cast<IsaLevel>(std::min(limit, static_cast<int>(detected_level())));
}

void set_isa_limit(IsaLevel limit) {
  isa_limit().store(static_cast<int>(limit), std::memory_order_relaxed);
}

Isa active_isa() {
  return info(active_level()).isa;
}

bool extension_active(Extension extension) {
  // The limit, not the detected level: a CPU may have an extension above
  // the highest level it meets in full (VBMI without VNNI).
  const int limit = isa_limit().load(std::memory_order_relaxed);
  return active_isa() == Isa::avx512 && limit >= static_cast<int>(allowed_from(extension)) &&
         cpu_has(extension);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::scalar:
      break;
  }
  return "scalar";
}

const char* level_name(IsaLevel level) {
  return info(level).name;
}

std::optional<IsaLevel> parse_level(std::string_view name) {
  if (name == "native") return detected_level();
  for (const auto& level : kLevels) {
    if (name == level.name) return level.level;
  }
  return std::nullopt;
}

std::string level_names() {
  std::string names;
  for (const auto& level : kLevels) names += std::string(level.name) + ", ";
  return names + "native";
}

std::vector<IsaLevel> available_levels() {
  std::vector<IsaLevel> levels;
  for (const auto& level : kLevels) {
    if (level.level <= detected_level()) levels.push_back(level.level);
  }
  return levels;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "unknown CPU";
}

std::vector<std::string> cpu_feature_names() {
  const auto& f = cpu_features();
  const std::pair<const char*, bool> features[] = {{"avx2", f.avx2},
                                                   {"fma", f.fma},
                                                   {"f16c", f.f16c},
                                                   {"avx512f", f.avx512f},
                                                   {"avx512bw", f.avx512bw},
                                                   {"avx512vl", f.avx512vl},
                                                   {"avx512dq", f.avx512dq},
                                                   {"avx512vnni", f.avx512vnni},
                                                   {"avx512vbmi", f.avx512vbmi},
                                                   {"avx512bf16", f.avx512bf16},
                                                   {"avx512fp16", f.avx512fp16}};
  std::vector<std::string> names;
  for (const auto& [name, present] : features)
    if (present) names.push_back(name);
  return names;
}

}  // namespace mlx_cpp::kernels
