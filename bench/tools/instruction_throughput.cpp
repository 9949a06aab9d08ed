// Multiply-accumulate throughput of one core for the instructions the CPU
// kernels could build on: float32 FMA (vfmadd231ps), bfloat16 pair dot
// products (vdpbf16ps), 16-bit integer pair dot products (vpdpwssd) and
// 8-bit quad dot products (vpdpbusd), each on 512-bit registers. Twelve
// independent accumulators hide latency, so the rate is the issue rate. A
// pair dot does 32 multiply-adds to the FMA's 16 (a quad dot 64); it only
// pays where it issues at more than half (a quarter of) the FMA's rate.
//
// Usage: instruction_throughput   (prints one line per instruction)
#include <chrono>
#include <cstdio>

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12 warns inside its own _mm512_set1_* intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

constexpr long kIterations = 50'000'000;
constexpr int kChains = 12;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Uses every accumulator's result, so the compiler keeps all the chains.
__attribute__((target("avx512f"))) void keep_alive(const __m512* acc) {
  float sum = 0;
  for (int i = 0; i < kChains; ++i) sum += _mm512_reduce_add_ps(acc[i]);
  if (sum == 12345.0f) std::puts("");
}

__attribute__((target("avx512f"))) double fma_macs_per_second() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 1e-7f * static_cast<float>(i));
  const __m512 b = _mm512_set1_ps(0.9999999f);
  const __m512 c = _mm512_set1_ps(1e-9f);
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  }
  const double seconds = seconds_since(start);
  keep_alive(acc);
  return static_cast<double>(kIterations) * kChains * 16 / seconds;
}

__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_macs_per_second() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3c00);  // 2^-7
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  const double seconds = seconds_since(start);
  keep_alive(acc);
  return static_cast<double>(kIterations) * kChains * 32 / seconds;
}

// Uses every integer accumulator's result.
__attribute__((target("avx512f"))) void keep_alive_integer(const __m512i* acc) {
  long long sum = 0;
  for (int i = 0; i < kChains; ++i) sum += _mm512_reduce_add_epi32(acc[i]);
  if (sum == 12345) std::puts("");
}

// vpdpwssd (Pairs = 2, 16-bit words) or vpdpbusd (Pairs = 4, bytes).
template <int Pairs>
__attribute__((target("avx512f,avx512vnni"))) double integer_dot_macs_per_second() {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_si512();
  const __m512i a = _mm512_set1_epi16(3);
  const __m512i b = _mm512_set1_epi16(5);
  const auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) {
      acc[i] = Pairs == 2 ? _mm512_dpwssd_epi32(acc[i], a, b) : _mm512_dpbusd_epi32(acc[i], a, b);
    }
  }
  const double seconds = seconds_since(start);
  keep_alive_integer(acc);
  return static_cast<double>(kIterations) * kChains * 16 * Pairs / seconds;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    std::puts("no AVX-512 on this CPU: nothing to measure");
    return 0;
  }
  const double fma = fma_macs_per_second();
  std::printf("vfmadd231ps zmm: %.1f G multiply-adds/s per core\n", fma / 1e9);
  if (__builtin_cpu_supports("avx512bf16")) {
    const double dot = bf16_dot_macs_per_second();
    std::printf("vdpbf16ps zmm:   %.1f G multiply-adds/s per core (%.2fx the FMA)\n", dot / 1e9,
                dot / fma);
  } else {
    std::puts("vdpbf16ps: not supported by this CPU");
  }
  if (__builtin_cpu_supports("avx512vnni")) {
    const double words = integer_dot_macs_per_second<2>();
    std::printf("vpdpwssd zmm:    %.1f G multiply-adds/s per core (%.2fx the FMA)\n", words / 1e9,
                words / fma);
    const double bytes = integer_dot_macs_per_second<4>();
    std::printf("vpdpbusd zmm:    %.1f G multiply-adds/s per core (%.2fx the FMA)\n", bytes / 1e9,
                bytes / fma);
  } else {
    std::puts("vpdpwssd, vpdpbusd: not supported by this CPU");
  }
}
#else
int main() {
  std::puts("x86-64 only: nothing to measure");
}
#endif
