#pragma once
// OpenAI's POST /v1/embeddings body, validated: `input` (a string, a list of
// strings, a list of token ids, or a list of such lists), `encoding_format`
// (float or base64), `dimensions` (a Matryoshka embedding's shorter form),
// and `prompt_name` (an extension: the model's named prompt, e.g. query or
// document, before each text). Every mistake is a 400 naming its field.
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace mlx_cpp::server {

// OpenAI's limit on the inputs of one request.
constexpr std::size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingsRequest {
  // Each input: a text, or token ids used as they are.
  std::vector<std::variant<std::string, std::vector<int>>> inputs;
  bool base64 = false;
  int dimensions = 0;  // 0: the model's
  std::string prompt_name;
};

// `embedding_dimension`: the served model's (dimensions may not exceed it).
EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body,
                                           int embedding_dimension);

// Little-endian float32 bytes in standard base64, as OpenAI's
// encoding_format "base64" carries an embedding.
std::string embedding_as_base64(const std::vector<float>& values);

}  // namespace mlx_cpp::server
