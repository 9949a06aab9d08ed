#include "kernels/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <fstream>

namespace mlx_cpp::kernels {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("f16c");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return Isa::avx512;
  if (avx2) return Isa::avx2;
#endif
  return Isa::scalar;
}

std::atomic<int>& isa_limit() {
  static std::atomic<int> limit{static_cast<int>(detected_isa())};
  return limit;
}

}  // namespace

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa active_isa() {
  int limit = isa_limit().load(std::memory_order_relaxed);
  return static_cast<Isa>(std::min(limit, static_cast<int>(detected_isa())));
}

void set_isa_limit(Isa limit) {
  isa_limit().store(static_cast<int>(limit));
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

}  // namespace mlx_cpp::kernels
