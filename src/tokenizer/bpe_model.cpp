#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "io/error.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

constexpr size_t kCacheCapacity = 100000;
constexpr size_t kCacheMaxPieceBytes = 256;

uint64_t pair_key(TokenId left, TokenId right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string optional_string(const nlohmann::json& spec, const char* key) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return "";
  if (!it->is_string())
    throw Error(std::string("[tokenizer.json] BPE field '") + key + "' is not a string");
  return it->get<std::string>();
}

// A merge entry is "left right" (older files) or ["left", "right"].
std::pair<std::string, std::string> merge_parts(const nlohmann::json& entry, size_t index) {
  if (entry.is_string()) {
    const auto& text = entry.get_ref<const std::string&>();
    const size_t space = text.find(' ');
    if (space != std::string::npos && text.find(' ', space + 1) == std::string::npos) {
      return {text.substr(0, space), text.substr(space + 1)};
    }
  } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
             entry[1].is_string()) {
    return {entry[0].get<std::string>(), entry[1].get<std::string>()};
  }
  throw Error("[tokenizer.json] BPE merge #" + std::to_string(index) +
              " is malformed: " + entry.dump());
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& spec) {
  if (spec.contains("dropout") && spec["dropout"].is_number() &&
      spec["dropout"].get<double>() > 0) {
    throw Error("[tokenizer.json] BPE dropout is not supported (it makes encoding random)");
  }
  if (!spec.contains("vocab") || !spec["vocab"].is_object()) {
    throw Error("[tokenizer.json] BPE model lacks an object 'vocab'");
  }
  load_vocab(spec["vocab"]);
  load_merges(spec.contains("merges") ? spec["merges"] : nlohmann::json::array());
  fuse_unk_ = spec.value("fuse_unk", false);
  byte_fallback_ = spec.value("byte_fallback", false);
  ignore_merges_ = spec.value("ignore_merges", false);
  continuing_subword_prefix_ = optional_string(spec, "continuing_subword_prefix");
  end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix");
  const std::string unk = optional_string(spec, "unk_token");
  if (!unk.empty()) {
    unk_id_ = token_to_id(unk);
    if (!unk_id_) throw Error("[tokenizer.json] BPE unk_token '" + unk + "' is not in the vocab");
  }
  byte_tokens_.resize(256);
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    byte_tokens_[byte] = token_to_id(name);
  }
}

void BpeModel::load_vocab(const nlohmann::json& vocab) {
  vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxTokenId) {
      throw Error("[tokenizer.json] BPE vocab entry '" + token + "' has invalid id " + id.dump() +
                  " (ids run from 0 to " + std::to_string(kMaxTokenId) + ")");
    }
    vocab_.emplace(token, id.get<TokenId>());
  }
  for (const auto& [token, id] : vocab_) {
    if (static_cast<size_t>(id) >= id_to_token_.size())
      id_to_token_.resize(static_cast<size_t>(id) + 1, nullptr);
    id_to_token_[id] = &token;
  }
}

void BpeModel::load_merges(const nlohmann::json& merges) {
  if (!merges.is_array()) throw Error("[tokenizer.json] BPE 'merges' is not an array");
  merges_.reserve(merges.size());
  const size_t prefix_length = continuing_subword_prefix_.size();
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = merge_parts(merges[rank], rank);
    const auto left_id = token_to_id(left);
    const auto right_id = token_to_id(right);
    // With a continuing-subword prefix the right part's prefix is dropped.
    const std::string merged =
        left + (prefix_length > 0 && right.rfind(continuing_subword_prefix_, 0) == 0
                    ? right.substr(prefix_length)
                    : right);
    const auto merged_id = token_to_id(merged);
    if (!left_id || !right_id || !merged_id) {
      throw Error("[tokenizer.json] BPE merge #" + std::to_string(rank) + " ('" + left + "', '" +
                  right + "') uses a token missing from the vocab");
    }
    merges_.emplace(pair_key(*left_id, *right_id), Merge{static_cast<uint32_t>(rank), *merged_id});
  }
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  return id_to_token_[id];
}

std::optional<BpeModel::Merge> BpeModel::find_merge(TokenId left, TokenId right) const {
  const auto it = merges_.find(pair_key(left, right));
  if (it == merges_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const auto id = token_to_id(piece)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = piece.size() <= kCacheMaxPieceBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    const auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  auto ids = merge_symbols(initial_symbols(piece));
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(piece), std::move(ids));
  }
}

}  // namespace mlx_cpp
