#pragma once
// The Tokenizer built from a Hugging Face tokenizer.json: added tokens →
// normalizer → pre-tokenizer → BPE model → special-token frame on encode;
// ids → token strings → decoder chain on decode.
#include <memory>
#include <nlohmann/json.hpp>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace mlx_cpp {

class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(const nlohmann::json& tokenizer_json, TokenizerConfig config);

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const override;

  size_t vocab_size() const override;
  std::optional<TokenId> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(TokenId id) const override;
  bool is_special_token(TokenId id) const override;

  std::optional<TokenId> bos_token_id() const override { return bos_id_; }
  std::optional<TokenId> eos_token_id() const override { return eos_id_; }
  std::string bos_token() const override { return config_.bos_token; }
  std::string eos_token() const override { return config_.eos_token; }
  std::string chat_template() const override { return config_.chat_template; }

 private:
  SpecialTokenFrame choose_frame(const nlohmann::json& post_processor) const;

  TokenizerConfig config_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<AddedVocabulary> added_;
  SpecialTokenFrame frame_;
  std::optional<TokenId> bos_id_;
  std::optional<TokenId> eos_id_;
};

}  // namespace mlx_cpp
