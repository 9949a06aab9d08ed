#pragma once
// A transformer block's decode step (one token of each sequence of a
// batch) as one graph node, on the fast path.
//
// Why: a decode step of a small model is bound by per-node costs, not by
// arithmetic. Built from ops, a block is ~25 graph nodes (norms, the
// projections, reshapes, rope, casts, the cache's slice update and slice,
// attention, the residual adds), each costing graph bookkeeping, a buffer
// and a hand-off to MLX's stream thread; SmolLM2-135M spent most of a
// token there. The fused node runs the same kernels (kernels/eager.h) in
// the same order on the same dtypes, so its results are the op graph's bit
// for bit (tests/model/fused_decode_test.cpp), and writes the token's keys
// and values into the cache's storage in place.
//
// Covers the llama-family block: quantized projections on the own kernels,
// optional q/k norms and biases, any rope variant, no sandwich norms. Other blocks, and caches
// without a decode slot (sliding windows), keep the op graph.
#include <mlx/array.h>

#include <memory>
#include <optional>
#include <vector>

#include "model/kv_cache.h"
#include "model/row_adapters.h"

namespace mlx_cpp {

struct TransformerBlock;

class FusedDecodeBlock {
 public:
  // nullopt when the block has a part the fused step does not cover.
  static std::optional<FusedDecodeBlock> make(const TransformerBlock& block);

  // x [1, 1, hidden] → the block's output [1, 1, hidden], the token's keys
  // and values written to the cache. nullopt, with the cache untouched,
  // when the cache offers no decode slot or stores another dtype than the
  // op graph would write.
  std::optional<mlx::core::array> operator()(const mlx::core::array& x, KvCache& cache,
                                             const RowAdapters& adapters = {}) const;
  // x [B, 1, hidden], one token of each of B sequences, each with its own
  // cache → [B, 1, hidden]. Each row's results are the ones it gets alone
  // (the decode kernels compute every row on its own). nullopt, with no
  // cache touched, when any cache offers no slot.
  // Each row's adapter updates are added to its projections as the op
  // graph's fast path adds them (kernels::low_rank_update_fast); nullopt
  // when a row runs DoRA on this block (the op graph computes that).
  std::optional<mlx::core::array> operator()(const mlx::core::array& x,
                                             const std::vector<KvCache*>& caches,
                                             const RowAdapters& adapters = {}) const;

  struct Plan;

 private:
  std::shared_ptr<const Plan> plan_;
};

}  // namespace mlx_cpp
