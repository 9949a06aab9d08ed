// Streaming-read bandwidth of this machine, in GB/s, with N threads reading
// disjoint parts of one buffer (the way the decode kernels stream weights).
// Prints the best of several passes. bench/compare divides the bytes a
// decoded token reads by it to get the decode floor.
//
// usage: stream_bandwidth [--threads N] [--mib SIZE]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Sums 64-bit words so the reads cannot be optimized away; four independent
// accumulators keep the loop limited by memory, not by the adds.
std::uint64_t read_range(const std::uint64_t* data, std::size_t count) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  for (std::size_t i = 0; i + 4 <= count; i += 4) {
    a += data[i];
    b += data[i + 1];
    c += data[i + 2];
    d += data[i + 3];
  }
  return a + b + c + d;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::size_t mib = 1024;  // well beyond any cache level
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--threads") {
      threads = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--mib") {
      mib = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "usage: stream_bandwidth [--threads N] [--mib SIZE]\n");
      return 2;
    }
  }
  const std::size_t words = mib * 1024 * 1024 / sizeof(std::uint64_t);
  std::vector<std::uint64_t> buffer(words, 1);  // touched: pages are resident
  double best = 0.0;
  std::uint64_t checksum = 0;
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<std::uint64_t> sums(threads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        std::size_t begin = words * t / threads, end = words * (t + 1) / threads;
        sums[t] = read_range(buffer.data() + begin, end - begin);
      });
    }
    for (auto& worker : workers) worker.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto sum : sums) checksum += sum;
    best = std::max(best, static_cast<double>(words * sizeof(std::uint64_t)) / seconds / 1e9);
  }
  if (checksum == 0) return 1;  // never: every word is 1
  std::printf("%.2f\n", best);
  return 0;
}
