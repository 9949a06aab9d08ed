#include "engine/embedding_runtime.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <cmath>

#include "io/error.h"
#include "io/json_file.h"

namespace mlx_cpp {
namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;

// Positions (rows x the longest row) of one forward: large enough that a
// projection's matrix product runs on many rows, small enough to bound the
// attention scores' memory.
constexpr std::size_t kGroupTokens = 2048;

}  // namespace

bool EmbeddingRuntime::holds_embedding_model(const fs::path& directory) {
  return SentenceEmbeddingHead::present(directory);
}

std::unique_ptr<EmbeddingRuntime> EmbeddingRuntime::open(const fs::path& directory,
                                                         KernelMode kernels) {
  if (!holds_embedding_model(directory))
    throw Error(directory.string() +
                " holds no embedding model (no modules.json of sentence-transformers)");
  auto loaded = load_model(directory, {kernels});
  const int hidden = loaded.config.value("hidden_size", 0);
  auto head = SentenceEmbeddingHead::from_directory(directory, hidden);
  std::unique_ptr<EmbeddingRuntime> runtime(
      new EmbeddingRuntime(std::move(loaded), std::move(head)));
  runtime->tokenizer_ = Tokenizer::from_directory(directory);
  runtime->max_tokens_ = runtime->loaded_.config.value("max_position_embeddings", 512);
  if (const auto bert = directory / "sentence_bert_config.json"; fs::exists(bert)) {
    const auto config = read_json_file(bert);
    if (config.contains("max_seq_length") && config["max_seq_length"].is_number_integer())
      runtime->max_tokens_ = std::min(runtime->max_tokens_, config["max_seq_length"].get<int>());
  }
  if (const auto st = directory / "config_sentence_transformers.json"; fs::exists(st)) {
    const auto config = read_json_file(st);
    if (config.contains("prompts") && config["prompts"].is_object())
      for (const auto& [name, text] : config["prompts"].items())
        if (text.is_string()) runtime->prompts_[name] = text.get<std::string>();
    if (config.contains("default_prompt_name") && config["default_prompt_name"].is_string())
      runtime->default_prompt_name_ = config["default_prompt_name"].get<std::string>();
  }
  return runtime;
}

std::vector<int> EmbeddingRuntime::tokenize(const std::string& text,
                                            const std::string& prompt_name) const {
  const auto& name = prompt_name.empty() ? default_prompt_name_ : prompt_name;
  std::string prompt;
  if (!name.empty()) {
    auto found = prompts_.find(name);
    if (found == prompts_.end()) {
      std::string known;
      for (const auto& [key, value] : prompts_) known += (known.empty() ? "" : ", ") + key;
      throw Error("unknown prompt name '" + name + "'" +
                  (known.empty() ? std::string(": the model has none") : "; it has " + known));
    }
    prompt = found->second;
  }
  return tokenizer_->encode(prompt + text, /*add_special_tokens=*/true);
}

void EmbeddingRuntime::check_input(const std::vector<int>& ids) const {
  if (ids.empty()) throw Error("an input to embed is empty");
  if (static_cast<int>(ids.size()) > max_tokens_)
    throw Error("an input of " + std::to_string(ids.size()) + " tokens is longer than the " +
                std::to_string(max_tokens_) + " this model embeds");
  const int vocab = loaded_.model->vocab_size();
  for (int id : ids)
    if (id < 0 || id >= vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                  std::to_string(vocab - 1) + ")");
}

std::vector<std::vector<float>> EmbeddingRuntime::embed_all(
    const std::vector<std::vector<int>>& inputs) const {
  for (const auto& ids : inputs) check_input(ids);
  // Shortest first; a group grows while its padding stays under a quarter
  // of its tokens and it holds at most kGroupTokens positions.
  std::vector<std::size_t> order(inputs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return inputs[a].size() < inputs[b].size();
  });
  std::vector<std::vector<float>> embeddings(inputs.size());
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin + 1, real_tokens = inputs[order[begin]].size();
    while (end < order.size()) {
      const std::size_t longest = inputs[order[end]].size();
      const std::size_t positions = longest * (end - begin + 1);
      if (positions > kGroupTokens || 4 * (positions - real_tokens - longest) > positions) break;
      real_tokens += longest;
      ++end;
    }
    const int rows = static_cast<int>(end - begin);
    const int length = static_cast<int>(inputs[order[end - 1]].size());
    std::vector<int> padded(static_cast<std::size_t>(rows) * length, 0), lengths;
    for (int row = 0; row < rows; ++row) {
      const auto& ids = inputs[order[begin + row]];
      std::copy(ids.begin(), ids.end(), padded.begin() + static_cast<std::ptrdiff_t>(row) * length);
      lengths.push_back(static_cast<int>(ids.size()));
    }
    auto hidden =
        loaded_.model->hidden_states(mx::array(padded.data(), {rows, length}, mx::int32), lengths);
    std::vector<mx::array> vectors;
    for (int row = 0; row < rows; ++row)
      vectors.push_back(
          head_(mx::slice(hidden, {row, 0, 0}, {row + 1, lengths[row], hidden.shape(2)})));
    mx::eval(vectors);
    for (int row = 0; row < rows; ++row) {
      const float* data = vectors[row].data<float>();
      embeddings[order[begin + row]].assign(data, data + vectors[row].size());
    }
    begin = end;
  }
  return embeddings;
}

std::vector<float> shorten_embedding(const std::vector<float>& embedding, int dimensions) {
  if (dimensions <= 0 || dimensions > static_cast<int>(embedding.size()))
    throw Error("dimensions must be between 1 and " + std::to_string(embedding.size()) + ", got " +
                std::to_string(dimensions));
  std::vector<float> shorter(embedding.begin(), embedding.begin() + dimensions);
  double sum = 0;
  for (float value : shorter) sum += double(value) * value;
  const double norm = std::max(std::sqrt(sum), 1e-12);
  for (auto& value : shorter) value = static_cast<float>(value / norm);
  return shorter;
}

}  // namespace mlx_cpp
