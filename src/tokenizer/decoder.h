#pragma once
// Decoders of tokenizer.json: ByteLevel, Metaspace, Replace, ByteFallback,
// Fuse, Strip and Sequence. Each maps the list of token strings to a new list
// (tokenizers' decode_chain); the final text is their concatenation.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mlx_cpp {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

// nullptr for a JSON null (tokens are then joined with single spaces).
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec);

}  // namespace mlx_cpp
