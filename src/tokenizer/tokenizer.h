#pragma once
// A Hugging Face tokenizer.json, encoded and decoded natively.
// Supports what LLM checkpoints use: byte-level BPE (GPT-2 / Llama-3 / Qwen2
// pre-tokenizers) and SentencePiece-style BPE (metaspace, byte fallback),
// plus added/special tokens and the normalizers/decoders these need.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace mlx_cpp {

using TokenId = int32_t;
// The largest id a tokenizer file may use. Ids index tables as long as the
// largest id: no real vocabulary comes near 2^24 (16.7M) tokens, and a
// larger id would make those tables gigabytes.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads <dir>/tokenizer.json and, when present, <dir>/tokenizer_config.json
  // (bos/eos tokens, add_bos_token / add_eos_token, chat_template). Throws
  // Error on a missing or malformed file or an unsupported model type.
  static std::unique_ptr<Tokenizer> from_directory(const std::filesystem::path& dir);

  // Encodes text. With add_special_tokens, applies the post-processor /
  // add_bos/add_eos as the tokenizer config says (never a double BOS).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const = 0;
  // Decodes ids. skip_special_tokens drops special added tokens.
  virtual std::string decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const = 0;

  virtual size_t vocab_size() const = 0;
  virtual std::optional<TokenId> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(TokenId id) const = 0;
  // Whether id is a special added token (decode drops it when asked to).
  virtual bool is_special_token(TokenId id) const = 0;

  virtual std::optional<TokenId> bos_token_id() const = 0;
  virtual std::optional<TokenId> eos_token_id() const = 0;
  virtual std::string bos_token() const = 0;  // "" when none
  virtual std::string eos_token() const = 0;  // "" when none
  // The Jinja chat template from tokenizer_config.json (or chat_template.jinja
  // next to it); empty when the model has none.
  virtual std::string chat_template() const = 0;
};

// Turns a growing token sequence into text pieces that are always valid
// UTF-8; the concatenation of all pieces plus finish() equals
// tokenizer.decode(all_ids, skip_special_tokens=true) (with the kept special
// tokens' text in place, when some are kept).
//
// Each add() decodes only a short trailing window: the tokens of the last
// emitted piece (the left context, e.g. for leading-space rules) plus the new
// ones. Text ending in an incomplete character (U+FFFD after decoding) is
// held back until later tokens complete it.
class StreamingDetokenizer {
 public:
  // kept: special tokens whose text is kept (the markup an output parser
  // reads); all other special tokens are dropped, as decode does.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, std::unordered_set<TokenId> kept = {});
  // Adds one token; returns the newly committed text (possibly empty).
  std::string add(TokenId id);
  // Flushes whatever is held back; returns the rest of the text.
  std::string finish();
  void reset();

 private:
  std::string decode_range(size_t begin, size_t end) const;

  std::string decode_ids(const std::vector<TokenId>& ids) const;

  const Tokenizer& tokenizer_;
  std::unordered_set<TokenId> kept_;
  std::vector<TokenId> ids_;
  size_t window_start_ = 0;  // first id of the decode window
  size_t emitted_ids_ = 0;   // ids whose text has been returned
  size_t emitted_bytes_ = 0;
};

}  // namespace mlx_cpp
