#pragma once
// A token mixer that carries state from token to token in place of
// attention (lfm2's short convolution, qwen3_5's gated DeltaNet): the dense
// block hands it the normed input and the layer's RecurrentStateCache.
#include <mlx/array.h>

#include <string>

#include "model/adapter_sites.h"

namespace mlx_cpp {

class RecurrentStateCache;
struct LayerRows;

class RecurrentMixer {
 public:
  virtual ~RecurrentMixer() = default;
  // x: [B, L, hidden] → [B, L, hidden], the cache's state advanced by L.
  virtual mlx::core::array operator()(const mlx::core::array& x, RecurrentStateCache& cache,
                                      const RowAdapters& adapters) const = 0;
  // x: [rows, 1, hidden], each row with its own cache (or, for consecutive
  // positions, one cache the rows advance in turn).
  virtual mlx::core::array operator()(const mlx::core::array& x, const LayerRows& rows) const = 0;
  // How many arrays its cache keeps (mlx-lm's ArraysCache size).
  virtual int state_slots() const = 0;
  virtual size_t bytes() const = 0;
  virtual size_t parameter_count() const = 0;
  // Records its projections as adapter sites under the layer's prefix
  // ("model.layers.N.") and its own name.
  virtual void register_adapter_sites(AdapterSites& sites, const std::string& layer_prefix,
                                      int layer) = 0;
};

}  // namespace mlx_cpp
