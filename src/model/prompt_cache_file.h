#pragma once
// Files of cached prompts in mlx-lm's format (save_prompt_cache /
// load_prompt_cache): one safetensors file holding every layer's cache
// state, arrays named "<layer>.<item>", and in its metadata the caller's
// strings ("0.<key>"), each layer's cache class ("1.<layer>") and which
// items were Python scalars ("2.<n>.0" names one, "2.<n>.1" says
// "scalar"). mlx-lm reads what this writes and the other way round.
#include <filesystem>
#include <map>
#include <string>

#include "io/safetensors_image.h"
#include "model/kv_cache.h"

namespace mlx_cpp {

struct PromptCacheContents {
  CacheList caches;
  std::map<std::string, std::string> metadata;  // the caller's strings
};

// The file of `caches` (each holding tokens) with `metadata`, in memory:
// evaluates the caches and copies their bytes, so it may be written from
// any thread afterwards.
SafetensorsImage prompt_cache_image(const CacheList& caches,
                                    const std::map<std::string, std::string>& metadata);

// Writes `caches` (each holding tokens) with `metadata` durably
// (io/durable_file.h). mlx-lm's generate needs the keys "model" and
// "tokenizer_config".
void save_prompt_cache(const std::filesystem::path& path, const CacheList& caches,
                       const std::map<std::string, std::string>& metadata);

// Reads a file save_prompt_cache (ours or mlx-lm's) wrote; throws Error
// naming the file and what is wrong with it (the header, a layer's class,
// an item's shape or type). The arrays load lazily, mapped by MLX.
PromptCacheContents load_prompt_cache(const std::filesystem::path& path);

}  // namespace mlx_cpp
