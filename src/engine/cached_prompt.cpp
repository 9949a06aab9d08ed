#include "engine/cached_prompt.h"

#include <mlx/ops.h>

#include "io/error.h"
#include "model/language_model.h"
#include "model/quantized_kv_cache.h"
#include "model/recurrent_state_cache.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// What the model's attention writes into one layer's cache: heads, key and
// value widths and dtype, read off a cache the model has fed one token. A
// recurrent layer's state: no heads, each slot's shape and dtype.
struct LayerShape {
  int heads = 0, key_dim = 0, value_dim = 0;
  mx::Dtype dtype = mx::float32;
  std::vector<std::pair<mx::Shape, mx::Dtype>> slots;
};

// The caches the model makes, fed one token (the probe layer_shapes reads).
CacheList probe_caches(const LanguageModel& model) {
  auto probe = model.make_caches();
  model.forward(mx::zeros({1, 1}, mx::int32), probe);
  return probe;
}

// Whether a cache keeps its floats in the dtype attention writes: every kind
// but TurboQuant's, whose norms are float32 whatever the model's dtype.
bool keeps_model_dtype(const KvCache& cache) {
  const auto quantization = cache.quantization();
  return !quantization || quantization->packing != kernels::KvPacking::turbo;
}

// The layer's heads, key and value widths and dtype as it stores them
// (quantized: the widths its groups hold, the dtype of its scales).
LayerShape stored_shape(const KvCache& cache) {
  if (const auto* recurrent = cache.as_recurrent_state()) {
    LayerShape shape;
    for (int i = 0; i < recurrent->slot_count(); ++i)
      if (const auto& slot = recurrent->slot(i))
        shape.slots.emplace_back(slot->shape(), slot->dtype());
    return shape;
  }
  const auto state = cache.saved_state();
  if (const auto quantization = cache.quantization()) {
    const auto& scales = state.array("0.1");
    return {state.array("0.0").shape(1), scales.shape(3) * quantization->group_size,
            state.array("1.1").shape(3) * quantization->group_size, scales.dtype()};
  }
  const auto& keys = state.array("0");
  return {keys.shape(1), keys.shape(3), state.array("1").shape(3), keys.dtype()};
}

std::vector<LayerShape> layer_shapes(const CacheList& probe) {
  std::vector<LayerShape> shapes;
  for (const auto& cache : probe) shapes.push_back(stored_shape(*cache));
  return shapes;
}

std::string describe_slots(const LayerShape& shape) {
  std::string text;
  for (const auto& [dims, dtype] : shape.slots) {
    if (!text.empty()) text += " and ";
    for (std::size_t i = 0; i < dims.size(); ++i)
      text += (i ? " x " : "") + std::to_string(dims[i]);
    text += " " + dtype_name(dtype);
  }
  return text.empty() ? "nothing" : text;
}

void check_layer(const KvCache& cache, const KvCache& made, const LayerShape& shape,
                 const LanguageModel& model, const std::string& where) {
  if (const auto quantization = cache.quantization()) {
    if (made.window()) throw Error(where + " is quantized where the model keeps a sliding window");
    if (auto refusal = model.quantized_kv_refusal(*quantization))
      throw Error("the cached prompt is quantized, but " + *refusal);
  } else if (cache.signature() != made.signature()) {
    throw Error(where + " is a " + cache.signature() + " cache where the model makes " +
                made.signature());
  }
  const auto stored = stored_shape(cache);
  if (!shape.slots.empty()) {
    if (stored.slots != shape.slots)
      throw Error(where + " holds a recurrent state of " + describe_slots(stored) +
                  " where the model keeps " + describe_slots(shape));
    return;
  }
  if (stored.heads != shape.heads || stored.key_dim != shape.key_dim ||
      stored.value_dim != shape.value_dim)
    throw Error(where + " holds " + std::to_string(stored.heads) + " heads of " +
                std::to_string(stored.key_dim) + " where the model's attention has " +
                std::to_string(shape.heads) + " of " + std::to_string(shape.key_dim));
  if (stored.dtype != shape.dtype && keeps_model_dtype(cache))
    throw Error(where + " holds " + dtype_name(stored.dtype) + " " +
                (cache.quantization() ? "scales" : "keys") + " where the model's keys are " +
                dtype_name(shape.dtype));
}

// The structural checks of check_cached_prompt, against shapes read once.
void check_against(const CacheList& caches, const LanguageModel& model,
                   const std::vector<LayerShape>& shapes) {
  const auto made = model.make_caches();
  if (caches.size() != made.size())
    throw Error("the cached prompt has " + std::to_string(caches.size()) +
                " layers; the model has " + std::to_string(made.size()));
  for (std::size_t layer = 0; layer < caches.size(); ++layer) {
    const std::string where = "layer " + std::to_string(layer) + " of the cached prompt";
    const auto& cache = *caches[layer];
    if (cache.offset() != caches.front()->offset())
      throw Error(where + " holds " + std::to_string(cache.offset()) + " tokens, layer 0 " +
                  std::to_string(caches.front()->offset()));
    check_layer(cache, *made[layer], shapes[layer], model, where);
  }
  if (caches.front()->offset() == 0) throw Error("the cached prompt holds no tokens");
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

std::string describe_quantization(const KvQuantization& quantization) {
  return std::to_string(quantization.bits) + " bits (" + kv_packing_name(quantization.packing) +
         ") in groups of " + std::to_string(quantization.group_size);
}

}  // namespace

void check_cached_prompt_scheme(const CacheList& caches, const KvCacheScheme& scheme) {
  if (!scheme.quantized()) return;
  for (const auto& cache : caches)
    if (const auto quantization = cache->quantization();
        quantization && !(*scheme.quantization == *quantization))
      throw Error("the cached prompt is quantized with " + describe_quantization(*quantization) +
                  "; the KV scheme asks for " + describe_quantization(*scheme.quantization));
}

void check_cached_prompt(const CacheList& caches, const LanguageModel& model,
                         const KvCacheScheme& scheme) {
  check_against(caches, model, layer_shapes(probe_caches(model)));
  check_cached_prompt_scheme(caches, scheme);
}

std::shared_ptr<const CachedPrompt> cached_prompt_from(PromptCacheContents contents,
                                                       const LanguageModel& model,
                                                       const KvCacheScheme& scheme,
                                                       const std::string& source) {
  try {
    const auto shapes = layer_shapes(probe_caches(model));
    // The fast path keeps float32 keys as float16 (model/dense_transformer.h):
    // a file the other path wrote is cast to what this one keeps.
    if (contents.caches.size() == shapes.size())
      for (std::size_t layer = 0; layer < shapes.size(); ++layer)
        if (shapes[layer].slots.empty() && keeps_model_dtype(*contents.caches[layer]) &&
            stored_shape(*contents.caches[layer]).dtype != shapes[layer].dtype)
          contents.caches[layer] = cast_cache(*contents.caches[layer], shapes[layer].dtype);
    check_against(contents.caches, model, shapes);
    check_cached_prompt_scheme(contents.caches, scheme);
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
