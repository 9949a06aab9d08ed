#pragma once
// Normalizers of tokenizer.json: NFC, Replace, Prepend, Strip, Lowercase and
// Sequence. Others (Bert, Precompiled, NFD/NFKC/NFKD, ...) are refused by
// name when the tokenizer loads.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace mlx_cpp {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

// nullptr for a JSON null (no normalizer).
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec);

}  // namespace mlx_cpp
