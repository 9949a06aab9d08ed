#include "engine/memory_admission.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

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
    : budget_(budget), weights_(model.weight_bytes()), prefill_chunk_(prefill_chunk) {
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

std::size_t MemoryAdmission::sequence_bytes(int tokens) const {
  std::size_t bytes = 0;
  for (const auto& cache : probe_) bytes += cache->bytes_for_tokens(tokens, prefill_chunk_);
  return bytes;
}

int MemoryAdmission::fit_max_tokens(int prompt_tokens, int wanted) const {
  if (!limited()) return wanted;
  const std::size_t room = cache_room();
  if (sequence_bytes(prompt_tokens + 1) > room)
    throw MemoryAdmissionError(
        "the prompt's " + std::to_string(prompt_tokens) + " tokens and one generated token need " +
        std::to_string(sequence_bytes(prompt_tokens + 1)) +
        " bytes of cache; the memory budget of " + std::to_string(budget_) + " bytes leaves " +
        std::to_string(room) + " after " + std::to_string(weights_) + " bytes of weights");
  // The largest n <= wanted with the sequence's caches within the room.
  int low = 1, high = wanted;
  while (low < high) {
    const int middle = low + (high - low + 1) / 2;
    if (sequence_bytes(prompt_tokens + middle) <= room)
      low = middle;
    else
      high = middle - 1;
  }
  return wanted < 1 ? wanted : low;
}

}  // namespace mlx_cpp
