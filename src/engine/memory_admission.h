#pragma once
// What a sequence may hold in memory. The budget covers the weights, the
// caches of every running sequence (reserved for its prompt plus its
// max_tokens, so a running sequence never runs out) and the prefix cache
// (evicted first when a sequence needs the room). The bytes per token come
// from the caches themselves: one token through fresh caches at start-up,
// then each cache says what it would hold for n tokens
// (KvCache::bytes_for_tokens), so a sliding window, a quantized or a
// float16 cache is counted as it is stored.
#include <cstddef>
#include <map>
#include <utility>

#include "engine/kv_cache_scheme.h"
#include "model/language_model.h"

namespace mlx_cpp {

class MemoryAdmission {
 public:
  // budget 0: no limit. Throws MemoryAdmissionError when the weights plus
  // one sequence of `context` tokens do not fit, naming both sizes.
  // Prompts are fed in chunks of at most `prefill_chunk` tokens (a
  // sliding-window cache holds a chunk on top of its window).
  MemoryAdmission(const LanguageModel& model, std::size_t budget, int context,
                  int prefill_chunk = 1);

  bool limited() const { return budget_ > 0; }
  std::size_t budget() const { return budget_; }
  std::size_t weight_bytes() const { return weights_; }
  // The most the caches of one sequence hold while it grows to `tokens`
  // tokens under `scheme`. A layer quantized past the scheme's start holds
  // its float storage and the quantized copy at once while it switches.
  std::size_t sequence_bytes(int tokens, const KvCacheScheme& scheme = {}) const;
  // Memory besides the weights that stays resident while it is set (mounted
  // adapters). Throws MemoryAdmissionError, and changes nothing, when the
  // weights, these bytes and one sequence of the full context would no
  // longer fit the budget.
  void set_resident_bytes(std::size_t bytes);
  std::size_t resident_bytes() const { return resident_; }
  // The bytes caches may use: the budget less the weights and the resident
  // bytes.
  std::size_t cache_room() const {
    return budget_ > weights_ + resident_ ? budget_ - weights_ - resident_ : 0;
  }
  // The most new tokens a prompt of `prompt_tokens` may generate under the
  // budget (at most `wanted`); throws MemoryAdmissionError when not even
  // one fits.
  int fit_max_tokens(int prompt_tokens, int wanted, const KvCacheScheme& scheme = {}) const;

 private:
  std::size_t budget_;
  std::size_t weights_;
  std::size_t resident_ = 0;
  int context_;
  int prefill_chunk_;
  // The probe's caches quantized this way (nullptr: the kind has no
  // quantized form), made on first use.
  const CacheList& quantized_probe(const KvQuantization& quantization) const;

  CacheList probe_;  // fresh caches after one token
  mutable std::map<std::pair<int, int>, CacheList> quantized_probes_;  // by (bits, group)
};

}  // namespace mlx_cpp
