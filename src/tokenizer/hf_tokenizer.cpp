#include "tokenizer/hf_tokenizer.h"

#include "io/error.h"
#include "io/json_file.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

const nlohmann::json& section(const nlohmann::json& root, const char* key) {
  static const nlohmann::json null_value;
  const auto it = root.find(key);
  return it == root.end() ? null_value : *it;
}

std::unique_ptr<BpeModel> make_model(const nlohmann::json& spec) {
  if (!spec.is_object()) throw Error("[tokenizer.json] 'model' is missing or not an object");
  // Files written by older tokenizers versions may omit the type of a BPE model.
  const std::string type = spec.value("type", std::string("BPE"));
  if (type != "BPE") {
    throw Error("[tokenizer.json] unsupported model type '" + type + "' (supported: BPE)");
  }
  return std::make_unique<BpeModel>(spec);
}

}  // namespace

HfTokenizer::HfTokenizer(const nlohmann::json& tokenizer_json, TokenizerConfig config)
    : config_(std::move(config)) {
  if (!tokenizer_json.is_object()) throw Error("[tokenizer.json] top level is not an object");
  model_ = make_model(section(tokenizer_json, "model"));
  normalizer_ = make_normalizer(section(tokenizer_json, "normalizer"));
  pre_tokenizer_ = make_pre_tokenizer(section(tokenizer_json, "pre_tokenizer"));
  decoder_ = make_decoder(section(tokenizer_json, "decoder"));
  added_ =
      std::make_unique<AddedVocabulary>(section(tokenizer_json, "added_tokens"), normalizer_.get());
  if (!config_.bos_token.empty()) bos_id_ = token_to_id(config_.bos_token);
  if (!config_.eos_token.empty()) eos_id_ = token_to_id(config_.eos_token);
  frame_ = choose_frame(section(tokenizer_json, "post_processor"));
}

// transformers (the pinned 5.x, which mlx-lm uses) ignores the config's
// add_bos_token / add_eos_token when tokenizer.json exists: the file's
// post-processor alone decides, and none means no special tokens.
SpecialTokenFrame HfTokenizer::choose_frame(const nlohmann::json& post_processor) const {
  return frame_from_post_processor(post_processor);
}

std::vector<TokenId> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (!utf8::is_valid(text)) throw Error("[tokenizer.encode] input text is not valid UTF-8");
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  for (auto& segment : added_->extract_and_normalize(text, normalizer_.get())) {
    if (segment.token) {
      ids.push_back(*segment.token);
      continue;
    }
    if (!pre_tokenizer_) {
      model_->encode_piece(segment.text.text, ids);
      continue;
    }
    for (const auto& piece : pre_tokenizer_->split({std::move(segment.text)})) {
      model_->encode_piece(piece.text, ids);
    }
  }
  if (!add_special_tokens) return ids;
  // Never a double BOS: when the text already starts with the token the
  // frame would put first (it spelled out the BOS itself), add it only once.
  auto prefix_begin = frame_.prefix.begin();
  if (!frame_.prefix.empty() && !ids.empty() && ids.front() == frame_.prefix.front()) {
    ++prefix_begin;
  }
  ids.insert(ids.begin(), prefix_begin, frame_.prefix.end());
  ids.insert(ids.end(), frame_.suffix.begin(), frame_.suffix.end());
  return ids;
}

std::string HfTokenizer::decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    const std::string* token = added_->decode_string(id);
    if (token == nullptr) token = model_->id_to_token(id);
    if (token == nullptr) continue;  // unknown ids are dropped, as tokenizers does
    if (skip_special_tokens && added_->is_special(*token)) continue;
    tokens.push_back(*token);
  }
  std::string text;
  if (!decoder_) {
    for (size_t i = 0; i < tokens.size(); ++i) text += (i > 0 ? " " : "") + tokens[i];
    return text;
  }
  for (const auto& piece : decoder_->decode_chain(std::move(tokens))) text += piece;
  return text;
}

size_t HfTokenizer::vocab_size() const {
  size_t size = model_->vocab_size();
  for (const auto& [id, token] : added_->tokens()) {
    if (model_->id_to_token(id) == nullptr) ++size;
  }
  return size;
}

std::optional<TokenId> HfTokenizer::token_to_id(std::string_view token) const {
  if (const auto id = added_->token_to_id(token)) return id;
  return model_->token_to_id(token);
}

std::optional<std::string> HfTokenizer::id_to_token(TokenId id) const {
  if (const auto it = added_->tokens().find(id); it != added_->tokens().end()) {
    return it->second.content;
  }
  if (const auto* token = model_->id_to_token(id)) return *token;
  return std::nullopt;
}

bool HfTokenizer::is_special_token(TokenId id) const {
  const auto it = added_->tokens().find(id);
  return it != added_->tokens().end() && it->second.special;
}

std::unique_ptr<Tokenizer> Tokenizer::from_directory(const std::filesystem::path& dir) {
  const auto path = dir / "tokenizer.json";
  if (!std::filesystem::exists(path)) {
    throw Error("[tokenizer] no tokenizer.json in " + dir.string());
  }
  const auto json = read_json_file(path);
  try {
    return std::make_unique<HfTokenizer>(json, read_tokenizer_config(dir));
  } catch (const nlohmann::json::exception& error) {
    throw Error("[tokenizer] malformed " + path.string() + ": " + error.what());
  }
}

}  // namespace mlx_cpp
