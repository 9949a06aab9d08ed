#pragma once
// An embedding model, loaded: its tokenizer, its encoder and the
// sentence-transformers head after it (pooling, dense layers,
// normalization). Texts become vectors as sentence-transformers makes them:
// the named prompt before the text, the tokenizer's special tokens around
// it, one forward of the whole sequence, the head.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/language_model.h"
#include "model/sentence_embedding_head.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

class EmbeddingRuntime {
 public:
  // Loads the directory; throws Error when it holds no embedding model.
  // fast: the own kernels (and an optimized BLAS for float32 weights);
  // stock: MLX's ops as the graph says.
  static std::unique_ptr<EmbeddingRuntime> open(const std::filesystem::path& directory,
                                                KernelMode kernels = KernelMode::fast);
  // Whether the directory holds one (a sentence-transformers checkpoint).
  static bool holds_embedding_model(const std::filesystem::path& directory);

  // The text's token ids with the named prompt before it ("": none) and
  // the special tokens. Throws Error for an unknown prompt name. Thread-safe.
  std::vector<int> tokenize(const std::string& text, const std::string& prompt_name = "") const;
  // Many inputs' embeddings, in input order: inputs of similar lengths go
  // through one forward together (padded on the right, the padding masked
  // and left out of the pooling), which reads each weight once for all of
  // them. The same vectors as one by one up to float32 rounding (the
  // matrix products sum in blocks of another shape). Throws as
  // check_input() for any input, before computing. Compute: one thread at
  // a time.
  std::vector<std::vector<float>> embed_all(const std::vector<std::vector<int>>& inputs) const;

  // Throws Error for an empty input, one longer than max_tokens() or an id
  // outside the vocabulary (what embed_all() refuses). Thread-safe.
  void check_input(const std::vector<int>& ids) const;

  int dimension() const { return head_.dimension(); }
  // The longest input, special tokens included (sentence-transformers'
  // max_seq_length, else the model's positions).
  int max_tokens() const { return max_tokens_; }
  const LanguageModel& model() const { return *loaded_.model; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  EmbeddingRuntime(LoadedModel loaded, SentenceEmbeddingHead head)
      : loaded_(std::move(loaded)), head_(std::move(head)) {}
  LoadedModel loaded_;
  SentenceEmbeddingHead head_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::map<std::string, std::string> prompts_;
  std::string default_prompt_name_;
  int max_tokens_ = 0;
};

// The first `dimensions` values of an embedding, normalized again (a
// Matryoshka embedding's shorter form, as OpenAI's `dimensions` gives it).
// Throws Error unless 0 < dimensions <= its size.
std::vector<float> shorten_embedding(const std::vector<float>& embedding, int dimensions);

}  // namespace mlx_cpp
