#pragma once
// The rows of one batched forward and what each row brings: its own
// per-layer caches (and so its own positions). Everything per row reaches
// the layers through this one object (its caches and its adapters).
//
// Rows are computed independently: each row attends over its own cache,
// and every per-row computation is the one a batch of one does, so a
// row's logits do not depend on the other rows. On the CPU this is also
// what mlx-lm's BatchGenerator computes bit for bit, padding and all:
// masked key columns, batch neighbours and a vector of rope offsets leave
// a row's results unchanged there (tests/engine/batch_generator_parity_test).
#include <optional>
#include <vector>

#include "model/kv_cache.h"
#include "model/row_adapters.h"

namespace mlx_cpp {

struct BatchRow {
  CacheList* caches = nullptr;  // the row's caches, one per layer
  // Sliding-window layers: attend over the window in the order mlx-lm's
  // batched ring holds it, this many newest keys first (the stock path in a
  // batch; engine/window_phase.h). nullopt: the row's own cache order.
  std::optional<int> ring_newest_first;
  const AdapterStack* adapters = nullptr;  // the row's adapters; none: the base model
};

struct ForwardBatch {
  std::vector<BatchRow> rows;
  // Rows that share a cache list are consecutive tokens of one sequence,
  // in order, and next to each other: row b attends over the keys of the
  // rows of its sequence before it, as if each token were decoded on a
  // step of its own (same kernels, same order), so each row's logits are
  // the ones plain decoding gives. Speculative decoding verifies drafts
  // this way, several sequences' in one forward.
  bool consecutive_positions = false;
};

}  // namespace mlx_cpp
