#include "model/sentence_embedding_head.h"

#include <mlx/ops.h>

#include <string>

#include "io/error.h"
#include "io/json_file.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;

const std::string kModules = "sentence_transformers.models.";

SentenceEmbeddingHead::Pooling read_pooling(const fs::path& folder) {
  const auto config = read_json_file(folder / "config.json");
  auto flag = [&config](const char* key) { return config.value(key, false); };
  if (!config.value("include_prompt", true))
    throw Error(folder.string() +
                ": pooling that leaves the prompt out (include_prompt false) is not supported");
  std::vector<SentenceEmbeddingHead::Pooling> modes;
  if (flag("pooling_mode_mean_tokens")) modes.push_back(SentenceEmbeddingHead::Pooling::mean);
  if (flag("pooling_mode_cls_token")) modes.push_back(SentenceEmbeddingHead::Pooling::cls);
  if (flag("pooling_mode_lasttoken")) modes.push_back(SentenceEmbeddingHead::Pooling::last_token);
  if (flag("pooling_mode_max_tokens")) modes.push_back(SentenceEmbeddingHead::Pooling::max);
  if (flag("pooling_mode_mean_sqrt_len_tokens") || flag("pooling_mode_weightedmean_tokens"))
    throw Error(folder.string() + ": only mean, cls, last-token and max pooling are supported");
  // Several modes concatenate their vectors in sentence-transformers; no
  // embedding model here needs that.
  if (modes.size() != 1)
    throw Error(folder.string() + ": exactly one pooling mode is supported, found " +
                std::to_string(modes.size()));
  return modes.front();
}

SentenceEmbeddingHead::Dense read_dense(const fs::path& folder, int in_features) {
  const auto config = read_json_file(folder / "config.json");
  const int in = config.value("in_features", 0), out = config.value("out_features", 0);
  if (in != in_features || out <= 0)
    throw Error(folder.string() + ": a dense layer of " + std::to_string(in) + " -> " +
                std::to_string(out) + " features does not follow " + std::to_string(in_features));
  const auto activation = config.value("activation_function", std::string());
  SentenceEmbeddingHead::Activation kind;
  if (activation == "torch.nn.modules.linear.Identity")
    kind = SentenceEmbeddingHead::Activation::identity;
  else if (activation == "torch.nn.modules.activation.Tanh")
    kind = SentenceEmbeddingHead::Activation::tanh;
  else
    throw Error(folder.string() + ": activation " + activation + " is not supported");
  auto weights = WeightStore::from_directory(folder);
  auto weight = weights.take("linear.weight", mx::Shape{out, in});
  std::optional<mx::array> bias;
  if (config.value("bias", true)) bias = weights.take("linear.bias", mx::Shape{out});
  weights.audit();
  return {mx::astype(weight, mx::float32),
          bias ? std::optional<mx::array>(mx::astype(*bias, mx::float32)) : std::nullopt, kind};
}

}  // namespace

bool SentenceEmbeddingHead::present(const fs::path& directory) {
  return fs::is_regular_file(directory / "modules.json");
}

SentenceEmbeddingHead SentenceEmbeddingHead::from_directory(const fs::path& directory,
                                                            int hidden_size) {
  const auto modules = read_json_file(directory / "modules.json");
  if (!modules.is_array()) throw Error((directory / "modules.json").string() + " is not a list");
  SentenceEmbeddingHead head;
  head.dimension_ = hidden_size;
  bool pooled = false;
  for (const auto& module : modules) {
    const auto type = module.value("type", std::string());
    const auto folder = directory / module.value("path", std::string());
    if (type == kModules + "Transformer") {
      if (pooled) throw Error("modules.json: the transformer must come first");
    } else if (type == kModules + "Pooling") {
      head.pooling_ = read_pooling(folder);
      pooled = true;
    } else if (type == kModules + "Dense" && pooled && !head.normalize_) {
      head.dense_.push_back(read_dense(folder, head.dimension_));
      head.dimension_ = head.dense_.back().weight.shape(0);
    } else if (type == kModules + "Normalize" && pooled) {
      head.normalize_ = true;
    } else {
      throw Error("modules.json: module " + type + " is not supported at its place");
    }
  }
  if (!pooled) throw Error("modules.json: no pooling module");
  return head;
}

mx::array SentenceEmbeddingHead::operator()(const mx::array& hidden) const {
  auto states = mx::astype(mx::squeeze(hidden, 0), mx::float32);  // [L, hidden]
  const int length = states.shape(0);
  mx::array pooled = mx::array(0.0f);
  switch (pooling_) {
    case Pooling::mean:
      // A sum divided by the count, as sentence-transformers writes it.
      pooled = mx::divide(mx::sum(states, 0), mx::array(static_cast<float>(length)));
      break;
    case Pooling::cls:
      pooled = mx::take(states, 0, 0);
      break;
    case Pooling::last_token:
      pooled = mx::take(states, length - 1, 0);
      break;
    case Pooling::max:
      pooled = mx::max(states, 0);
      break;
  }
  for (const auto& dense : dense_) {
    pooled = mx::matmul(dense.weight, pooled);
    if (dense.bias) pooled = mx::add(pooled, *dense.bias);
    if (dense.activation == Activation::tanh) pooled = mx::tanh(pooled);
  }
  if (normalize_) {
    // x / max(|x|, 1e-12), torch's normalize.
    auto norm = mx::sqrt(mx::sum(mx::square(pooled)));
    pooled = mx::divide(pooled, mx::maximum(norm, mx::array(1e-12f)));
  }
  return pooled;
}

}  // namespace mlx_cpp
