#include "model/conv_state_cache.h"

#include <stdexcept>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

void ConvStateCache::advance(const mx::array& state, int tokens) {
  state_ = state;
  offset_ += tokens;
}

std::pair<mx::array, mx::array> ConvStateCache::update_and_fetch(const mx::array&,
                                                                 const mx::array&) {
  throw std::logic_error("a convolution layer's cache holds no keys and values");
}

std::vector<mx::array> ConvStateCache::state() const {
  if (!state_) return {};
  return {*state_};
}

std::unique_ptr<KvCache> ConvStateCache::clone() const {
  return std::make_unique<ConvStateCache>(*this);
}

CacheState ConvStateCache::saved_state() const {
  if (!state_) throw Error("a convolution cache that has seen no tokens has no state to save");
  return {"ArraysCache", {{"0.0", *state_}, {"1", std::monostate{}}, {"2", std::monostate{}}}};
}

}  // namespace mlx_cpp
