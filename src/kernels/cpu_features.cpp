#include "kernels/cpu_features.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>

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

bool detect_extension(Extension extension) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (extension) {
    case Extension::vnni:
      return __builtin_cpu_supports("avx512vnni");
    case Extension::vbmi:
      return __builtin_cpu_supports("avx512vbmi");
    case Extension::bf16:
      return __builtin_cpu_supports("avx512bf16");
    case Extension::fp16:
      return __builtin_cpu_supports("avx512fp16");
  }
#endif
  (void)extension;
  return false;
}

// Detected once: every quantized matmul call asks (kernel table choice).
bool cpu_has(Extension extension) {
  static const std::array<bool, 4> present = {
      detect_extension(Extension::vnni), detect_extension(Extension::vbmi),
      detect_extension(Extension::bf16), detect_extension(Extension::fp16)};
  return present[static_cast<int>(extension)];
}

IsaLevel detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  if (!avx2) return IsaLevel::scalar;
  if (!avx512) return IsaLevel::avx2;
  if (!cpu_has(Extension::vnni)) return IsaLevel::avx512;
  if (!cpu_has(Extension::bf16)) return IsaLevel::avx512_vnni;
  if (!cpu_has(Extension::fp16)) return IsaLevel::avx512_bf16;
  return IsaLevel::avx512_fp16;
#else
  return IsaLevel::scalar;
#endif
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
  std::vector<std::string> names;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports needs string literals.
#define MLX_CPP_FEATURE(name) \
  if (__builtin_cpu_supports(name)) names.push_back(name);
  MLX_CPP_FEATURE("avx2")
  MLX_CPP_FEATURE("fma")
  MLX_CPP_FEATURE("f16c")
  MLX_CPP_FEATURE("avx512f")
  MLX_CPP_FEATURE("avx512bw")
  MLX_CPP_FEATURE("avx512vl")
  MLX_CPP_FEATURE("avx512dq")
  MLX_CPP_FEATURE("avx512vnni")
  MLX_CPP_FEATURE("avx512vbmi")
  MLX_CPP_FEATURE("avx512bf16")
  MLX_CPP_FEATURE("avx512fp16")
#undef MLX_CPP_FEATURE
#endif
  return names;
}

}  // namespace mlx_cpp::kernels
