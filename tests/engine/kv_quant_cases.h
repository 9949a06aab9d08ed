#pragma once
// The cases of tools/oracle/kv_quant_goldens.py: every architecture of the
// model goldens in bfloat16 (float32 for experts) and at 4 bits.
#include <algorithm>
#include <string>
#include <vector>

#include "../model/golden_case.h"

namespace mlx_cpp::testing {

inline constexpr const char* kKvQuantSuite = "kv_quant_goldens";

inline std::vector<std::string> kv_quant_cases() {
  std::vector<std::string> names;
  for (const auto& name : model_golden_cases()) {
    const auto quant = name.substr(name.rfind('_') + 1);
    if (quant == "bf16" || quant == "f32" || quant == "q4") names.push_back(name);
  }
  names.erase(std::remove(names.begin(), names.end(), "qwen2_q4f32"), names.end());
  return names;
}

}  // namespace mlx_cpp::testing
