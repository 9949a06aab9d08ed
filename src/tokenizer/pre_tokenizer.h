#pragma once
// Pre-tokenizers of tokenizer.json: ByteLevel, Split, Digits, Metaspace,
// Whitespace, WhitespaceSplit and Sequence. Each turns pieces into smaller
// pieces; the model then encodes every piece on its own.
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "tokenizer/piece.h"

namespace mlx_cpp {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual std::vector<Piece> split(std::vector<Piece> pieces) const = 0;
};

// nullptr for a JSON null (the whole normalized text is one piece).
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec);

}  // namespace mlx_cpp
