#pragma once
// Access to the goldens written by tools/oracle/model_goldens.py.
#include <mlx/array.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlx_cpp::testing {

// The case names the oracle writes: every architecture x {bf16, q4, q8}.
std::vector<std::string> model_golden_cases();
// The mixture-of-experts model_types among them.
std::vector<std::string> moe_architectures();
// Layers of other token mixers beside attention (model_goldens.py's last
// architectures).
std::vector<std::string> hybrid_architectures();
// Architectures served by a dedicated graph (model/dedicated_graphs.h), the
// oracle's last.
std::vector<std::string> dedicated_architectures();
// model_golden_cases() without the dedicated graphs' (for what only the
// generic graph has).
std::vector<std::string> generic_model_golden_cases();
// The suffix of an architecture's unquantized case: "f32" where it routes
// experts (MLX's CPU gather_mm multiplies float32 only), else "bf16".
std::string unquantized_case(const std::string& arch);

struct GoldenCase {
  std::filesystem::path directory;
  std::filesystem::path model_directory;
  nlohmann::json goldens;  // goldens.json
  std::unordered_map<std::string, mlx::core::array> logits;

  // A case of model_goldens, or of another oracle's suite of that layout.
  static GoldenCase load(const std::string& name, const std::string& suite = "model_goldens");
};

// Bit-exact comparison: same dtype, shape and every element (NaN == NaN).
// Returns "" when equal, else a description with the max abs difference.
std::string compare_exact(const mlx::core::array& actual, const mlx::core::array& expected);

}  // namespace mlx_cpp::testing
