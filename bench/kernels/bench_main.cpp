// Runs the kernel benchmarks and prints, after Google Benchmark's own
// output, one line per stock/fast pair: both times (the fastest repetition)
// and the speed-up stock / fast.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernels.h"

namespace {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      std::string name = run.run_name.function_name;
      double time = run.GetAdjustedRealTime();
      auto [it, inserted] = best_.emplace(name, time);
      if (!inserted) it->second = std::min(it->second, time);
      if (inserted) order_.push_back(name);
    }
  }

  void print_ratios() const {
    std::printf("\n%-52s %12s %12s %9s\n", "kernel (fastest repetition, us)", "stock", "fast",
                "speed-up");
    for (const auto& name : order_) {
      const std::string suffix = "/stock";
      if (name.size() < suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix)) {
        continue;
      }
      std::string base = name.substr(0, name.size() - suffix.size());
      auto fast = best_.find(base + "/fast");
      if (fast == best_.end()) continue;
      double stock_time = best_.at(name);
      std::printf("%-52s %12.1f %12.1f %8.2fx\n", base.c_str(), stock_time, fast->second,
                  stock_time / fast->second);
    }
  }

 private:
  std::map<std::string, double> best_;
  std::vector<std::string> order_;
};

// Own flags, taken out before Google Benchmark parses the rest:
//   --kernel_threads=N   threads of the kernels' pool (default: all cores)
//   --isa=LEVEL          highest instruction-set level the kernels may use
//                        (scalar, avx2, avx512, avx512-vnni, avx512-bf16,
//                        avx512-fp16)
void parse_own_flags(int& argc, char** argv) {
  using namespace mlx_cpp::kernels;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--kernel_threads=", 0) == 0) {
      set_kernel_threads(std::stoi(arg.substr(17)));
    } else if (arg.rfind("--isa=", 0) == 0) {
      const auto level = parse_level(arg.substr(6));
      if (!level) {
        std::fprintf(stderr, "unknown --isa level %s (one of %s)\n", arg.substr(6).c_str(),
                     level_names().c_str());
        std::exit(2);
      }
      set_isa_limit(*level);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
}

}  // namespace

int main(int argc, char** argv) {
  parse_own_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  using namespace mlx_cpp::kernels;
  std::printf("kernels: isa %s, %d threads\n", level_name(active_level()), kernel_threads());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
