#include "engine/decode_traffic.h"

#include <algorithm>
#include <limits>

namespace mlx_cpp {

double mean_kv_bytes_read(const CacheList& caches, int first_context, int last_context) {
  if (last_context < first_context) return 0;
  double total = 0;
  for (const auto& cache : caches) {
    const auto state = cache->state();
    if (state.empty()) continue;
    const int positions = state.front().shape(2);  // [B, kv_heads, positions, head_dim]
    if (positions == 0) continue;
    double bytes_per_position = 0;
    for (const auto& array : state) bytes_per_position += double(array.nbytes()) / positions;
    // A cache that has seen more positions than it holds keeps a window.
    const int cap = cache->offset() > positions ? positions : std::numeric_limits<int>::max();
    for (int context = first_context; context <= last_context; ++context)
      total += bytes_per_position * std::min(context, cap);
  }
  return total / (last_context - first_context + 1);
}

}  // namespace mlx_cpp
