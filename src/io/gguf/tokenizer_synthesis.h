#pragma once
// Builds Hugging Face tokenizer files from a GGUF vocabulary, loadable by the
// Python `tokenizers` library and by mlx-lm:
//  - `gpt2` vocabularies (byte-level BPE with merges) get the pre-tokenizer
//    that tokenizer.ggml.pre names (gpt2, smollm, llama-bpe, qwen2);
//  - `llama` vocabularies (SentencePiece BPE, scores, byte fallback; Gemma 3)
//    get merges rebuilt from the vocabulary and a metaspace pipeline.
// Control tokens become special added tokens, user-defined ones plain added
// tokens; bos/eos/unk/pad, add_bos_token and the chat template carry over.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp::gguf {

class GgufFile;

struct TokenizerFiles {
  nlohmann::json tokenizer;           // tokenizer.json
  nlohmann::json tokenizer_config;    // tokenizer_config.json
  nlohmann::json special_tokens_map;  // special_tokens_map.json
  nlohmann::json generation_config;   // generation_config.json
};

// GGUF token types (llama_token_type).
enum TokenType : int {
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6,
};

struct GgufVocabulary {
  std::string model;  // tokenizer.ggml.model: gpt2 | llama
  std::string pre;    // tokenizer.ggml.pre
  std::string architecture;
  std::vector<std::string> tokens;
  std::vector<int> types;
  std::vector<float> scores;
  std::vector<std::string> merges;
  std::optional<int> bos, eos, unk, pad, eot, eom;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::optional<std::string> chat_template;
};

GgufVocabulary read_vocabulary(const GgufFile& file);
TokenizerFiles synthesize_tokenizer(const GgufFile& file);

// Pieces shared by the two vocabulary kinds (tokenizer_files.cpp).
// Control and user-defined tokens, as added tokens. `spellings` holds each
// token as the model vocabulary spells it; a token respelled there (raw
// spaces in a byte-level or Gemma vocabulary) is left to the model, as
// transformers does, since `tokenizers` would give it a fresh id otherwise.
nlohmann::json added_tokens(const GgufVocabulary& vocabulary,
                            const std::vector<std::string>& spellings);
nlohmann::json post_processor(const GgufVocabulary& vocabulary);
// tokenizer_byte_level.cpp / tokenizer_sentencepiece.cpp
nlohmann::json byte_level_tokenizer(const GgufVocabulary& vocabulary);
nlohmann::json sentencepiece_tokenizer(const GgufVocabulary& vocabulary);

}  // namespace mlx_cpp::gguf
