#pragma once
// Constrained decoding: a grammar (JSON schema, JSON, regex, EBNF, a list of
// choices) compiled against the model's vocabulary, and a per-sequence
// matcher that says which tokens may come next. The engine applies that
// as a mask on each row's logits before sampling, so it works with
// batching and either kernel mode. The engine is xgrammar's C++ core.
#include <mlx/array.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mlx_cpp::grammar {

struct GrammarSpec {
  enum class Kind {
    json_object,
    json_schema,
    regex,
    ebnf,
    choice,
    structural_tag
  } kind = Kind::json_object;
  std::string text;  // the schema (JSON text), regex, EBNF grammar or structural tag (JSON)
  std::vector<std::string> choices;  // choice: the output is exactly one of these
  // json_schema: properties the schema does not list are refused (and
  // every listed one is required only where the schema says).
  bool strict = true;
};

class CompiledGrammar;  // shareable and read-only once compiled

// The model's vocabulary as the grammar engine sees it, built once at load.
class GrammarVocabulary {
 public:
  // tokenizer_json: the text of tokenizer.json (its decoder tells how token
  // strings map to bytes). vocab_size: the logits' width. stop_ids: the
  // tokens that end a generation (allowed once the grammar is complete).
  // marker_tokens: special tokens the answer's text shows (a tool-call
  // format's markup): the grammar sees their text, and structural tags
  // may name them; other special tokens are never allowed but as stops.
  GrammarVocabulary(const Tokenizer& tokenizer, const std::string& tokenizer_json, int vocab_size,
                    const std::vector<int>& stop_ids,
                    const std::unordered_set<int>& marker_tokens = {});
  ~GrammarVocabulary();
  // Throws mlx_cpp::Error naming what could not be compiled. Thread-safe.
  std::shared_ptr<const CompiledGrammar> compile(const GrammarSpec& spec) const;
  int vocab_size() const { return vocab_size_; }

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
  std::unordered_map<std::string, int> marker_tokens_;  // text → id, for structural tags
  int vocab_size_ = 0;
  mutable std::mutex mutex_;
};

// One sequence's place in its grammar.
class TokenConstraint {
 public:
  explicit TokenConstraint(std::shared_ptr<const CompiledGrammar> grammar);
  ~TokenConstraint();
  TokenConstraint(TokenConstraint&&) noexcept;
  // Moves past a generated token; false when the grammar does not allow it
  // (cannot happen for tokens drawn under allowed()).
  bool accept(int token);
  // [vocab] bool: the tokens that keep the output inside the grammar.
  mlx::core::array allowed();
  // The grammar is complete and a stop token was accepted.
  bool finished() const;

 private:
  struct Matcher;
  std::unique_ptr<Matcher> matcher_;
  std::vector<int32_t> bitmask_;  // one bit per token, reused
  int vocab_size_ = 0;
};

// logits [1, vocab] with the tokens `allowed` refuses set to -inf.
mlx::core::array mask_logits(const mlx::core::array& logits, const mlx::core::array& allowed);

}  // namespace mlx_cpp::grammar
