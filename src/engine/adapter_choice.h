#pragma once
// The adapter stack a request names: "name", "a+b" (updates added in that
// order), "a*0.5+b" (a weight per adapter). Text only: the registry
// (adapter_registry.h) resolves the names.
#include <string>
#include <vector>

namespace mlx_cpp {

// One adapter of a stack as a request names it.
struct AdapterChoice {
  std::string name;
  float weight = 1.0f;
};

// "a", "a+b", "a*0.5+b" → choices; throws Error on an empty name or a bad
// weight.
std::vector<AdapterChoice> parse_adapter_stack(const std::string& text);

}  // namespace mlx_cpp
