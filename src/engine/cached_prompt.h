#pragma once
// A prompt prefilled earlier and kept (a prompt-cache file, as mlx-lm's
// cache_prompt writes): caches that hold its tokens, which a request
// continues from. Only the caches are kept, as in mlx-lm's files, not the
// tokens: the request's prompt is what follows them, and its penalties see
// only that, as mlx-lm's generate --prompt-cache-file does.
#include <map>
#include <memory>
#include <string>

#include "engine/kv_cache_scheme.h"
#include "model/kv_cache.h"
#include "model/prompt_cache_file.h"

namespace mlx_cpp {

class LanguageModel;

struct CachedPrompt {
  CacheList caches;                             // cloned by each request that continues from them
  int tokens = 0;                               // tokens the caches hold
  std::map<std::string, std::string> metadata;  // the file's own strings
};

// A prompt-cache file's contents (model/prompt_cache_file.h), checked
// against `model` under `scheme` (check_cached_prompt); errors name
// `source`.
std::shared_ptr<const CachedPrompt> cached_prompt_from(PromptCacheContents contents,
                                                       const LanguageModel& model,
                                                       const KvCacheScheme& scheme,
                                                       const std::string& source);

// Checks caches against `model` under `scheme`:
// one cache per layer of the kind the model makes (a sliding window of the
// same size), the heads, head dimension and dtype the model's attention
// writes, every layer holding the same number of tokens, and quantized
// layers only where the model's attention reads packed keys and where the
// scheme, if it quantizes, asks for the same bits and group size (as
// mlx-lm's generate checks --kv-bits). Throws Error naming the mismatch.
void check_cached_prompt(const CacheList& caches, const LanguageModel& model,
                         const KvCacheScheme& scheme);

// The part of check_cached_prompt a request's own scheme decides (what a
// scheduler checks per request; the rest held when the cached prompt was
// made by cached_prompt_from).
void check_cached_prompt_scheme(const CacheList& caches, const KvCacheScheme& scheme);

}  // namespace mlx_cpp
