#include "engine/cached_prompt.h"

#include <mlx/ops.h>

#include "io/error.h"
#include "model/language_model.h"
#include "model/quantized_kv_cache.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// What the model's attention writes into one layer's cache: heads, key and
// value widths and dtype, read off a cache the model has fed one token.
struct LayerShape {
  int heads = 0, key_dim = 0, value_dim = 0;
  mx::Dtype dtype = mx::float32;
};

std::vector<LayerShape> layer_shapes(const LanguageModel& model) {
  auto probe = model.make_caches();
  model.forward(mx::zeros({1, 1}, mx::int32), probe);
  std::vector<LayerShape> shapes;
  for (const auto& cache : probe) {
    const auto state = cache->saved_state();
    const auto& keys = std::get<mx::array>(state.items[0].second);
    const auto& values = std::get<mx::array>(state.items[1].second);
    shapes.push_back({keys.shape(1), keys.shape(3), values.shape(3), keys.dtype()});
  }
  return shapes;
}

std::string dtype_name(mx::Dtype dtype) {
  if (dtype == mx::bfloat16) return "bfloat16";
  if (dtype == mx::float16) return "float16";
  if (dtype == mx::float32) return "float32";
  return "another dtype";
}

void check_layer(const KvCache& cache, const KvCache& made, const LayerShape& shape,
                 const std::string& where) {
  const auto state = cache.saved_state();
  if (const auto quantization = cache.quantization()) {
    if (made.window()) throw Error(where + " is quantized where the model keeps a sliding window");
    const auto& packed = std::get<mx::array>(state.items[0].second);        // "0.0"
    const auto& scales = std::get<mx::array>(state.items[1].second);        // "0.1"
    const auto& value_scales = std::get<mx::array>(state.items[4].second);  // "1.1"
    const int key_dim = scales.shape(3) * quantization->group_size;
    const int value_dim = value_scales.shape(3) * quantization->group_size;
    if (packed.shape(1) != shape.heads || key_dim != shape.key_dim || value_dim != shape.value_dim)
      throw Error(where + " holds " + std::to_string(packed.shape(1)) + " heads of " +
                  std::to_string(key_dim) + " where the model's attention has " +
                  std::to_string(shape.heads) + " of " + std::to_string(shape.key_dim));
    if (scales.dtype() != shape.dtype)
      throw Error(where + " holds " + dtype_name(scales.dtype()) +
                  " scales where the model's "
                  "keys are " +
                  dtype_name(shape.dtype));
    return;
  }
  if (cache.signature() != made.signature())
    throw Error(where + " is a " + cache.signature() + " cache where the model makes " +
                made.signature());
  const auto& keys = std::get<mx::array>(state.items[0].second);
  const auto& values = std::get<mx::array>(state.items[1].second);
  if (keys.shape(1) != shape.heads || keys.shape(3) != shape.key_dim ||
      values.shape(3) != shape.value_dim)
    throw Error(where + " holds " + std::to_string(keys.shape(1)) + " heads of " +
                std::to_string(keys.shape(3)) + " where the model's attention has " +
                std::to_string(shape.heads) + " of " + std::to_string(shape.key_dim));
  if (keys.dtype() != shape.dtype)
    throw Error(where + " holds " + dtype_name(keys.dtype()) + " keys where the model's are " +
                dtype_name(shape.dtype));
}

// The cache with its float arrays (storage, or scales and biases) cast to
// `dtype`; packed codes stay as they are.
std::unique_ptr<KvCache> cast_cache(const KvCache& cache, mx::Dtype dtype) {
  auto state = cache.saved_state();
  for (auto& [name, item] : state.items)
    if (auto* array = std::get_if<mx::array>(&item); array && array->dtype() != mx::uint32)
      item = mx::astype(*array, dtype);
  return cache_from_state(state);
}

// The dtype of a cache's float arrays.
mx::Dtype float_dtype(const KvCache& cache) {
  const auto state = cache.saved_state();
  const auto& first = std::get<mx::array>(state.items[cache.quantization() ? 1 : 0].second);
  return first.dtype();
}

}  // namespace

void check_cached_prompt(const CacheList& caches, const LanguageModel& model,
                         const KvCacheScheme& scheme) {
  const auto made = model.make_caches();
  if (caches.size() != made.size())
    throw Error("the cached prompt has " + std::to_string(caches.size()) +
                " layers; the model has " + std::to_string(made.size()));
  const auto shapes = layer_shapes(model);
  for (std::size_t layer = 0; layer < caches.size(); ++layer) {
    const std::string where = "layer " + std::to_string(layer) + " of the cached prompt";
    const auto& cache = *caches[layer];
    if (cache.offset() != caches.front()->offset())
      throw Error(where + " holds " + std::to_string(cache.offset()) + " tokens, layer 0 " +
                  std::to_string(caches.front()->offset()));
    check_layer(cache, *made[layer], shapes[layer], where);
    if (const auto quantization = cache.quantization()) {
      if (auto refusal = model.quantized_kv_refusal(*quantization))
        throw Error("the cached prompt is quantized, but " + *refusal);
      if (scheme.quantized() && !(*scheme.quantization == *quantization))
        throw Error("the cached prompt is quantized with " + std::to_string(quantization->bits) +
                    " bits in groups of " + std::to_string(quantization->group_size) +
                    "; the KV scheme asks for " + std::to_string(scheme.quantization->bits) +
                    " in groups of " + std::to_string(scheme.quantization->group_size));
    }
  }
  if (caches.front()->offset() == 0) throw Error("the cached prompt holds no tokens");
}

std::shared_ptr<const CachedPrompt> cached_prompt_from(PromptCacheContents contents,
                                                       const LanguageModel& model,
                                                       const KvCacheScheme& scheme,
                                                       const std::string& source) {
  try {
    // The fast path keeps float32 keys as float16 (model/dense_transformer.h):
    // a file the other path wrote is cast to what this one keeps.
    if (contents.caches.size() == model.make_caches().size()) {
      const auto shapes = layer_shapes(model);
      for (std::size_t layer = 0; layer < shapes.size(); ++layer)
        if (float_dtype(*contents.caches[layer]) != shapes[layer].dtype)
          contents.caches[layer] = cast_cache(*contents.caches[layer], shapes[layer].dtype);
    }
    check_cached_prompt(contents.caches, model, scheme);
  } catch (const Error& error) {
    throw Error("prompt cache " + source + ": " + error.what());
  }
  auto prompt = std::make_shared<CachedPrompt>();
  prompt->tokens = contents.caches.front()->offset();
  prompt->caches = std::move(contents.caches);
  prompt->metadata = std::move(contents.metadata);
  return prompt;
}

}  // namespace mlx_cpp
