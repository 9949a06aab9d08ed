#pragma once
// What a decode step reads from memory besides the weights (which the model
// reports itself, LanguageModel::weight_bytes_per_token): the keys and values
// it attends over. Benchmarks divide the sum by the machine's bandwidth for
// the decode floor.
#include "model/kv_cache.h"

namespace mlx_cpp {

// Mean bytes of keys and values read by the decode steps at contexts
// first_context..last_context, from the caches as they stand after those
// steps: per cache, its storage's bytes per position times the positions
// attended, capped at the positions a rotating (sliding-window) cache holds.
double mean_kv_bytes_read(const CacheList& caches, int first_context, int last_context);

}  // namespace mlx_cpp
