// Linked into the tests that hold the fast kernels to their contract, so
// CTest can run them once per SIMD level (tests/CMakeLists.txt, ISA_LEVELS):
// MLX_CPP_ISA caps the level before any test runs, as `mlx-cpp --isa` does.
// A level this CPU lacks skips the run and says so, as does the CPU's own
// level (the plain run of the binary is that run); an unknown name fails it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "kernels/cpu_features.h"

namespace {

namespace k = mlx_cpp::kernels;

class IsaLevelFromEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* name = std::getenv("MLX_CPP_ISA");
    if (name == nullptr || *name == '\0') return;
    const auto level = k::parse_level(name);
    ASSERT_TRUE(level.has_value())
        << "MLX_CPP_ISA is one of " << k::level_names() << ", not '" << name << "'";
    if (*level > k::detected_level()) {
      GTEST_SKIP() << "MLX_CPP_ISA=" << name << ": this CPU (" << k::cpu_model() << ") runs up to "
                   << k::level_name(k::detected_level());
    }
    if (*level == k::detected_level()) {
      GTEST_SKIP() << "MLX_CPP_ISA=" << name << " is this CPU's own level: the plain run of "
                   << "these tests covers it";
    }
    k::set_isa_limit(*level);
    std::cout << "[ isa ] CPU kernels capped at " << k::level_name(k::active_level()) << '\n';
  }
};

const auto* const registered = ::testing::AddGlobalTestEnvironment(new IsaLevelFromEnvironment);

}  // namespace
