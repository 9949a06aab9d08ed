#pragma once
// What a sentence-transformers checkpoint puts after its transformer
// (modules.json): pooling of the token states into one vector, dense
// layers, and normalization to unit length, applied as
// sentence-transformers applies them.
#include <mlx/array.h>

#include <filesystem>
#include <optional>
#include <vector>

namespace mlx_cpp {

class SentenceEmbeddingHead {
 public:
  enum class Pooling { mean, cls, last_token, max };
  enum class Activation { identity, tanh };
  struct Dense {
    mlx::core::array weight;  // [out, in]
    std::optional<mlx::core::array> bias;
    Activation activation = Activation::identity;
  };

  // Reads modules.json and each module's folder; `hidden_size` is the
  // transformer's. Throws Error naming a module it cannot apply.
  static SentenceEmbeddingHead from_directory(const std::filesystem::path& directory,
                                              int hidden_size);
  // Whether the directory is a sentence-transformers checkpoint
  // (modules.json).
  static bool present(const std::filesystem::path& directory);

  // hidden: [1, L, hidden], one sequence's final states → [dimension], float32.
  mlx::core::array operator()(const mlx::core::array& hidden) const;
  int dimension() const { return dimension_; }

 private:
  Pooling pooling_ = Pooling::mean;
  std::vector<Dense> dense_;
  bool normalize_ = false;
  int dimension_ = 0;
};

}  // namespace mlx_cpp
