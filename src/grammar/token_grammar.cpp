#include "grammar/token_grammar.h"

#include <dlpack/dlpack.h>
#include <mlx/ops.h>
#include <xgrammar/xgrammar.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "io/error.h"

namespace mx = mlx::core;

namespace mlx_cpp::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(xgrammar::CompiledGrammar grammar, int vocab_size)
      : grammar(std::move(grammar)), vocab_size(vocab_size) {}
  xgrammar::CompiledGrammar grammar;
  int vocab_size;
};

struct GrammarVocabulary::Engine {
  xgrammar::TokenizerInfo info;
  xgrammar::GrammarCompiler compiler;
  Engine(xgrammar::TokenizerInfo tokenizer_info)
      : info(std::move(tokenizer_info)), compiler(info, /*max_threads=*/2) {}
};

namespace {

// Each id's token string as the vocabulary stores it ("Ġthe" for byte-level
// BPE). Special tokens (<|im_end|>, <|endoftext|>, ...) and ids past the
// tokenizer's vocabulary (padding in the logits) are left empty, which the
// grammar engine never allows: their text must not count as characters of
// a JSON string. Stop tokens are allowed by id once the grammar is complete.
// Markers keep their text: the answer shows it, and forced calls write them.
std::vector<std::string> encoded_vocabulary(const Tokenizer& tokenizer, int vocab_size,
                                            const std::unordered_set<int>& markers) {
  std::vector<std::string> vocabulary(vocab_size);
  for (int id = 0; id < vocab_size; ++id)
    if (auto token = tokenizer.id_to_token(id);
        token && (!tokenizer.is_special_token(id) || markers.count(id)))
      vocabulary[id] = *token;
  return vocabulary;
}

// Token elements of a structural tag ({"type": "token", "token": "[ARGS]"})
// that name a marker token become its id (the engine would look the text
// up in byte-decoded strings, which markup like <｜tool▁sep｜> is not). A
// string that is no marker is markup this vocabulary writes as text.
void resolve_token_strings(nlohmann::ordered_json& node,
                           const std::unordered_map<std::string, int>& special_tokens) {
  if (node.is_array()) {
    for (auto& item : node) resolve_token_strings(item, special_tokens);
    return;
  }
  if (!node.is_object()) return;
  if (node.value("type", "") == "token" && node.contains("token") && node["token"].is_string()) {
    const std::string text = node["token"];
    if (auto found = special_tokens.find(text); found != special_tokens.end())
      node["token"] = found->second;
    else
      node = {{"type", "const_string"}, {"value", text}};
    return;
  }
  for (auto& [key, value] : node.items()) {
    if (key == "exclude_tokens" && value.is_array()) {
      for (auto& token : value)
        if (token.is_string())
          if (auto found = special_tokens.find(token); found != special_tokens.end())
            token = found->second;
      continue;
    }
    resolve_token_strings(value, special_tokens);
  }
}

// A regex matching exactly one of the choices.
std::string choice_regex(const std::vector<std::string>& choices) {
  std::string regex = "(";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) regex += "|";
    for (char c : choices[i]) {
      if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) regex += '\\';
      regex += c;
    }
  }
  return regex + ")";
}

// xgrammar's messages open with a time and its source location
// ("[00:40:01] .../json_schema_converter.cc:5088: Cannot find ..."): only
// the reason after them means anything to a user.
std::string engine_reason(std::string message) {
  const size_t located = message.find(".cc:");
  if (located != std::string::npos) {
    const size_t reason = message.find(": ", located);
    if (reason != std::string::npos) message.erase(0, reason + 2);
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

const char* kind_name(GrammarSpec::Kind kind) {
  switch (kind) {
    case GrammarSpec::Kind::json_object:
      return "json_object";
    case GrammarSpec::Kind::json_schema:
      return "json_schema";
    case GrammarSpec::Kind::regex:
      return "regex";
    case GrammarSpec::Kind::ebnf:
      return "grammar";
    case GrammarSpec::Kind::choice:
      return "choice";
    case GrammarSpec::Kind::structural_tag:
      return "structural_tag";
  }
  return "grammar";
}

}  // namespace

GrammarVocabulary::GrammarVocabulary(const Tokenizer& tokenizer, const std::string& tokenizer_json,
                                     int vocab_size, const std::vector<int>& stop_ids,
                                     const std::unordered_set<int>& marker_tokens)
    : vocab_size_(vocab_size) {
  try {
    // How token strings map to bytes (byte-level, byte fallback, raw) and
    // whether a leading space is implied, read from tokenizer.json.
    auto metadata =
        nlohmann::json::parse(xgrammar::TokenizerInfo::DetectMetadataFromHF(tokenizer_json));
    xgrammar::TokenizerInfo info(
        encoded_vocabulary(tokenizer, vocab_size, marker_tokens),
        static_cast<xgrammar::VocabType>(metadata["vocab_type"].get<int>()), vocab_size,
        std::vector<int32_t>(stop_ids.begin(), stop_ids.end()),
        metadata["add_prefix_space"].get<bool>());
    engine_ = std::make_unique<Engine>(std::move(info));
    for (int id : marker_tokens)
      if (auto token = tokenizer.id_to_token(id)) marker_tokens_.emplace(*token, id);
  } catch (const std::exception& error) {
    throw Error(std::string("[grammar] cannot read the vocabulary: ") + error.what());
  }
}

GrammarVocabulary::~GrammarVocabulary() = default;

std::shared_ptr<const CompiledGrammar> GrammarVocabulary::compile(const GrammarSpec& spec) const {
  std::lock_guard lock(mutex_);
  auto& compiler = engine_->compiler;
  try {
    switch (spec.kind) {
      case GrammarSpec::Kind::json_object:
        return std::make_shared<CompiledGrammar>(compiler.CompileBuiltinJSONGrammar(), vocab_size_);
      case GrammarSpec::Kind::json_schema:
        // Compact whitespace: with any whitespace allowed, small models can
        // fill max_tokens with newlines and never close the object.
        return std::make_shared<CompiledGrammar>(
            compiler.CompileJSONSchema(spec.text, /*any_whitespace=*/false, std::nullopt,
                                       std::nullopt, spec.strict),
            vocab_size_);
      case GrammarSpec::Kind::regex:
        return std::make_shared<CompiledGrammar>(compiler.CompileRegex(spec.text), vocab_size_);
      case GrammarSpec::Kind::ebnf:
        return std::make_shared<CompiledGrammar>(compiler.CompileGrammar(spec.text, "root"),
                                                 vocab_size_);
      case GrammarSpec::Kind::choice:
        if (spec.choices.empty()) throw Error("[grammar] choice: the list of choices is empty");
        return std::make_shared<CompiledGrammar>(compiler.CompileRegex(choice_regex(spec.choices)),
                                                 vocab_size_);
      case GrammarSpec::Kind::structural_tag: {
        auto tag = nlohmann::ordered_json::parse(spec.text, nullptr, /*allow_exceptions=*/false);
        if (tag.is_discarded()) throw Error("[grammar] the structural tag is not valid JSON");
        resolve_token_strings(tag, marker_tokens_);
        return std::make_shared<CompiledGrammar>(compiler.CompileStructuralTag(tag.dump()),
                                                 vocab_size_);
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {
    throw Error(std::string("[grammar] cannot compile the ") + kind_name(spec.kind) + ": " +
                engine_reason(error.what()));
  }
  throw Error("[grammar] unknown grammar kind");
}

struct TokenConstraint::Matcher {
  xgrammar::GrammarMatcher matcher;
  std::shared_ptr<const CompiledGrammar> grammar;  // the matcher refers to it
};

TokenConstraint::TokenConstraint(std::shared_ptr<const CompiledGrammar> grammar)
    : matcher_(
          std::make_unique<Matcher>(Matcher{xgrammar::GrammarMatcher(grammar->grammar), grammar})),
      bitmask_((grammar->vocab_size + 31) / 32),
      vocab_size_(grammar->vocab_size) {}

TokenConstraint::~TokenConstraint() = default;
TokenConstraint::TokenConstraint(TokenConstraint&&) noexcept = default;

bool TokenConstraint::accept(int token) {
  return matcher_->matcher.AcceptToken(token);
}

bool TokenConstraint::finished() const {
  return matcher_->matcher.IsTerminated();
}

mx::array TokenConstraint::allowed() {
  int64_t shape[1] = {static_cast<int64_t>(bitmask_.size())};
  DLTensor tensor{};
  tensor.data = bitmask_.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = 1;
  tensor.dtype = DLDataType{kDLInt, 32, 1};
  tensor.shape = shape;
  matcher_->matcher.FillNextTokenBitmask(&tensor);
  // Bit i of word w is token 32 w + i. Unpacked here rather than with array
  // ops: six MLX ops over a 150k vocabulary cost ten times the loop.
  std::unique_ptr<bool[]> allowed(new bool[bitmask_.size() * 32]);
  for (size_t word = 0; word < bitmask_.size(); ++word) {
    const uint32_t bits = static_cast<uint32_t>(bitmask_[word]);
    for (int bit = 0; bit < 32; ++bit) allowed[word * 32 + bit] = (bits >> bit) & 1u;
  }
  return mx::array(allowed.get(), {vocab_size_}, mx::bool_);
}

mx::array mask_logits(const mx::array& logits, const mx::array& allowed) {
  return mx::where(allowed, logits,
                   mx::array(-std::numeric_limits<float>::infinity(), logits.dtype()));
}

}  // namespace mlx_cpp::grammar
