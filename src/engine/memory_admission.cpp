#include "engine/memory_admission.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

}  // namespace

MemoryAdmission::MemoryAdmission(const LanguageModel& model, std::size_t budget, int context,
                                 int prefill_chunk)
    : budget_(budget),
      weights_(model.weight_bytes()),
      context_(context),
      prefill_chunk_(prefill_chunk) {
  if (!limited()) return;
  probe_ = model.make_caches();
  model.forward(mx::zeros({1, 1}, mx::int32), probe_);
  evaluate_cache_state(probe_);
  const std::size_t full = sequence_bytes(context);
  if (weights_ + full > budget_)
    throw MemoryAdmissionError("the model needs " + mib(weights_) + " of weights and " + mib(full) +
                               " of cache for one sequence of its " + std::to_string(context) +
                               "-token context, more than the memory budget of " + mib(budget_) +
                               " (raise the budget or lower the context size)");
}

void MemoryAdmission::set_resident_bytes(std::size_t bytes) {
  if (limited()) {
    const std::size_t full = sequence_bytes(context_);
    if (weights_ + bytes + full > budget_)
      throw MemoryAdmissionError(mib(bytes) + " held beside " + mib(weights_) +
                                 " of weights leave no room for one " + "sequence of the " +
                                 std::to_string(context_) + "-token context (" + mib(full) +
                                 ") within the memory budget of " + mib(budget_));
  }
  resident_ = bytes;
}

const CacheList& MemoryAdmission::quantized_probe(const KvQuantization& quantization) const {
  auto& probe = quantized_probes_[{quantization.bits, quantization.group_size}];
  if (probe.empty())
    for (const auto& cache : probe_) probe.push_back(cache->quantized(quantization));
  return probe;
}

std::size_t MemoryAdmission::sequence_bytes(int tokens, const KvCacheScheme& scheme) const {
  const int layers = static_cast<int>(probe_.size());
  const CacheList* quantized =
      scheme.quantized() ? &quantized_probe(*scheme.quantization) : nullptr;
  std::size_t bytes = 0;
  for (int layer = 0; layer < layers; ++layer) {
    const auto& cache = probe_[layer];
    const auto* packed = quantized ? (*quantized)[layer].get() : nullptr;
    if (!packed || !scheme.quantizes_layer(layer, layers) || tokens < scheme.quantized_start) {
      bytes += cache->bytes_for_tokens(tokens, prefill_chunk_);
      continue;
    }
    // The switch comes after the forward that reaches the start: at most a
    // prompt chunk past it, when both forms are held.
    const int switched = std::min(tokens, scheme.quantized_start + std::max(prefill_chunk_, 1));
    const std::size_t switching = cache->bytes_for_tokens(switched, prefill_chunk_) +
                                  packed->bytes_for_tokens(switched, prefill_chunk_);
    bytes += std::max(switching, packed->bytes_for_tokens(tokens, prefill_chunk_));
  }
  return bytes;
}

int MemoryAdmission::fit_max_tokens(int prompt_tokens, int wanted,
                                    const KvCacheScheme& scheme) const {
  if (!limited()) return wanted;
  const std::size_t room = cache_room();
  if (sequence_bytes(prompt_tokens + 1, scheme) > room)
    throw MemoryAdmissionError(
        "the prompt's " + std::to_string(prompt_tokens) + " tokens and one generated token need " +
        std::to_string(sequence_bytes(prompt_tokens + 1, scheme)) +
        " bytes of cache; the memory budget of " + std::to_string(budget_) + " bytes leaves " +
        std::to_string(room) + " after " + std::to_string(weights_ + resident_) +
        " bytes of weights and adapters");
  // The largest n <= wanted with the sequence's caches within the room.
  int low = 1, high = wanted;
  while (low < high) {
    const int middle = low + (high - low + 1) / 2;
    if (sequence_bytes(prompt_tokens + middle, scheme) <= room)
      low = middle;
    else
      high = middle - 1;
  }
  return wanted < 1 ? wanted : low;
}

}  // namespace mlx_cpp
