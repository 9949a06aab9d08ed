#include "model/recurrent_state_cache.h"

#include <stdexcept>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

void RecurrentStateCache::advance(std::vector<mx::array> slots, int tokens) {
  if (slots.size() != slots_.size())
    throw std::logic_error("a recurrent state advanced with another number of slots");
  for (std::size_t i = 0; i < slots.size(); ++i) slots_[i] = std::move(slots[i]);
  offset_ += tokens;
}

std::pair<mx::array, mx::array> RecurrentStateCache::update_and_fetch(const mx::array&,
                                                                      const mx::array&) {
  throw std::logic_error("a recurrent layer's cache holds no keys and values");
}

size_t RecurrentStateCache::byte_size() const {
  size_t bytes = 0;
  for (const auto& slot : slots_)
    if (slot) bytes += slot->nbytes();
  return bytes;
}

std::vector<mx::array> RecurrentStateCache::state() const {
  std::vector<mx::array> arrays;
  for (const auto& slot : slots_)
    if (slot) arrays.push_back(*slot);
  return arrays;
}

std::unique_ptr<KvCache> RecurrentStateCache::clone() const {
  return std::make_unique<RecurrentStateCache>(*this);
}

CacheState RecurrentStateCache::saved_state() const {
  CacheState state{"ArraysCache", {}};
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]) throw Error("a recurrent cache that has seen no tokens has no state to save");
    state.items.emplace_back("0." + std::to_string(i), *slots_[i]);
  }
  state.items.emplace_back("1", std::monostate{});
  state.items.emplace_back("2", std::monostate{});
  return state;
}

}  // namespace mlx_cpp
