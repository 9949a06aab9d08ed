// SentencePiece BPE vocabularies (GGUF tokenizer.ggml.model == "llama") to a
// tokenizer.json BPE model with byte fallback. GGUF keeps scores, not merges,
// so merges are rebuilt from the vocabulary the way Hugging Face's converters
// do: every split of a piece into two vocabulary pieces is a merge, ranked by
// the piece's priority (its score; for Gemma its position in the file, which
// is its merge order), ties broken by longer left then longer right part.
#include <algorithm>
#include <unordered_map>

#include "io/gguf/tokenizer_synthesis.h"

namespace mlx_cpp::gguf {
namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

bool is_gemma(const GgufVocabulary& vocabulary) {
  return vocabulary.architecture.rfind("gemma", 0) == 0;
}

// Gemma files store runs of spaces as real spaces; the model spells them "▁▁".
std::string piece_spelling(const GgufVocabulary& vocabulary, const std::string& token) {
  if (!is_gemma(vocabulary) || token.size() < 2 ||
      token.find_first_not_of(' ') != std::string::npos) {
    return token;
  }
  std::string spelled;
  for (std::size_t i = 0; i < token.size(); ++i) spelled += kMetaspace;
  return spelled;
}

std::vector<std::size_t> character_starts(const std::string& text) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  return starts;
}

struct Merge {
  double priority;
  std::size_t left_length;   // in characters
  std::size_t right_length;  // in characters
  std::size_t order;         // insertion order: piece id, then (left id, right id)
  int left;
  int right;
};

nlohmann::json rebuilt_merges(const GgufVocabulary& vocabulary,
                              const std::vector<std::string>& pieces,
                              const std::unordered_map<std::string, int>& ids) {
  std::vector<Merge> merges;
  for (std::size_t id = 0; id < pieces.size(); ++id) {
    const auto& piece = pieces[id];
    double priority = is_gemma(vocabulary) || vocabulary.scores.empty()
                          ? -static_cast<double>(id)
                          : static_cast<double>(vocabulary.scores[id]);
    auto starts = character_starts(piece);
    std::vector<Merge> local;
    for (std::size_t split = 1; split < starts.size(); ++split) {
      auto left = ids.find(piece.substr(0, starts[split]));
      auto right = ids.find(piece.substr(starts[split]));
      if (left == ids.end() || right == ids.end()) continue;
      local.push_back({priority, split, starts.size() - split, 0, left->second, right->second});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return std::pair(a.left, a.right) < std::pair(b.left, b.right);
    });
    for (auto& merge : local) {
      merge.order = merges.size();
      merges.push_back(merge);
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.left_length != b.left_length) return a.left_length > b.left_length;
    if (a.right_length != b.right_length) return a.right_length > b.right_length;
    return a.order < b.order;
  });
  auto pairs = nlohmann::json::array();
  for (const auto& merge : merges) pairs.push_back({pieces[merge.left], pieces[merge.right]});
  return pairs;
}

nlohmann::json replace_step(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

}  // namespace

nlohmann::json sentencepiece_tokenizer(const GgufVocabulary& vocabulary) {
  std::vector<std::string> pieces;
  std::unordered_map<std::string, int> ids;
  nlohmann::json vocab = nlohmann::json::object();
  for (std::size_t id = 0; id < vocabulary.tokens.size(); ++id) {
    pieces.push_back(piece_spelling(vocabulary, vocabulary.tokens[id]));
    ids[pieces.back()] = static_cast<int>(id);  // last id wins, as a Python dict would
    if (!vocab.contains(pieces.back())) vocab[pieces.back()] = id;
  }
  auto decoders = nlohmann::json::array(
      {replace_step(kMetaspace, " "), {{"type", "ByteFallback"}}, {{"type", "Fuse"}}});
  nlohmann::json normalizer = nullptr;
  nlohmann::json pre_tokenizer;
  if (is_gemma(vocabulary)) {  // Gemma: spaces become ▁ in the normalizer, no prefix
    normalizer = replace_step(" ", kMetaspace);
    pre_tokenizer = {{"type", "Split"},
                     {"pattern", {{"String", " "}}},
                     {"behavior", "MergedWithPrevious"},
                     {"invert", false}};
  } else {
    auto scheme = vocabulary.add_space_prefix ? "first" : "never";
    pre_tokenizer = {{"type", "Metaspace"},
                     {"replacement", kMetaspace},
                     {"prepend_scheme", scheme},
                     {"split", false}};
    if (vocabulary.add_space_prefix) {
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    }
  }
  nlohmann::json unk = nullptr;
  if (vocabulary.unk) unk = pieces[*vocabulary.unk];
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens(vocabulary, pieces)},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", post_processor(vocabulary)},
          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", unk},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", rebuilt_merges(vocabulary, pieces, ids)}}}};
}

}  // namespace mlx_cpp::gguf
