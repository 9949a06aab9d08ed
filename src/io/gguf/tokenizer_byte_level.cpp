// Byte-level BPE (GGUF tokenizer.ggml.model == "gpt2") to tokenizer.json.
#include "io/error.h"
#include "io/gguf/tokenizer_synthesis.h"

namespace mlx_cpp::gguf {
namespace {

// Split patterns of the pre-tokenizers llama.cpp names in tokenizer.ggml.pre.
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

nlohmann::json byte_level_step(bool use_regex, bool trim_offsets) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", trim_offsets},
          {"use_regex", use_regex}};
}

nlohmann::json split_then_bytes(const char* pattern, bool trim_offsets) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", pattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level_step(false, trim_offsets)}}};
}

// The pre-tokenizer for tokenizer.ggml.pre; throws naming the supported ones.
nlohmann::json pre_tokenizer(const std::string& pre) {
  if (pre == "gpt2" || pre == "default") return byte_level_step(true, true);
  if (pre == "smollm") {  // single digits, then GPT-2's split
    return {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Digits"}, {"individual_digits", true}}, byte_level_step(true, true)}}};
  }
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    return split_then_bytes(kLlama3Split, true);
  }
  if (pre == "qwen2") return split_then_bytes(kQwen2Split, false);
  throw Error("[convert] unsupported tokenizer.ggml.pre '" + pre +
              "' (supported: gpt2, default, smollm, llama-bpe, qwen2)");
}

// GPT-2's reversible byte -> printable code point table.
std::vector<std::string> byte_alphabet() {
  std::vector<std::string> spelling(256);
  int next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
    int code_point = printable ? byte : next++;
    std::string utf8;
    if (code_point < 0x80) {
      utf8.push_back(static_cast<char>(code_point));
    } else {
      utf8.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
      utf8.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    }
    spelling[byte] = utf8;
  }
  return spelling;
}

// Tokens already spelled in the byte alphabet stay; others (raw added text
// such as "a b") are respelled so the BPE vocabulary is uniform.
std::string byte_level_spelling(const std::string& token,
                                const std::vector<std::string>& alphabet) {
  bool in_alphabet = true;
  for (unsigned char c : token) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c < 0x20 || c == 0x7F)
      in_alphabet = false;
  }
  if (in_alphabet) return token;
  std::string spelled;
  for (unsigned char c : token) spelled += alphabet[c];
  return spelled;
}

nlohmann::json merge_pairs(const std::vector<std::string>& merges) {
  auto pairs = nlohmann::json::array();
  for (const auto& merge : merges) {
    // As llama.cpp: split at the first space after the first character.
    auto space = merge.find(' ', 1);
    if (space == std::string::npos) throw Error("[convert] malformed BPE merge '" + merge + "'");
    pairs.push_back({merge.substr(0, space), merge.substr(space + 1)});
  }
  return pairs;
}

}  // namespace

nlohmann::json byte_level_tokenizer(const GgufVocabulary& vocabulary) {
  auto alphabet = byte_alphabet();
  nlohmann::json vocab = nlohmann::json::object();
  std::vector<std::string> spellings;
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) {
    spellings.push_back(byte_level_spelling(vocabulary.tokens[id], alphabet));
    if (!vocab.contains(spellings.back())) vocab[spellings.back()] = id;  // first id wins
  }
  nlohmann::json normalizer = nullptr;
  if (vocabulary.pre == "qwen2") normalizer = {{"type", "NFC"}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens(vocabulary, spellings)},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer(vocabulary.pre)},
          {"post_processor", post_processor(vocabulary)},
          {"decoder", byte_level_step(true, true)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", vocabulary.pre == "llama-bpe" || vocabulary.pre == "llama3" ||
                                  vocabulary.pre == "llama-v3"},
            {"vocab", vocab},
            {"merges", merge_pairs(vocabulary.merges)}}}};
}

}  // namespace mlx_cpp::gguf
