#pragma once
// What encode(add_special_tokens=true) puts around the ids of one sequence:
// from tokenizer.json's post_processor (TemplateProcessing, Roberta, Bert,
// ByteLevel, Sequence), or rebuilt from tokenizer_config.json's
// add_bos_token / add_eos_token the way transformers does.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

struct SpecialTokenFrame {
  std::vector<TokenId> prefix;
  std::vector<TokenId> suffix;
};

// The frame tokenizer.json's post_processor adds to a single sequence.
SpecialTokenFrame frame_from_post_processor(const nlohmann::json& spec);

}  // namespace mlx_cpp
