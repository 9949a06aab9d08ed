#include "server/responses_store.h"

#include <algorithm>

namespace mlx_cpp::server {

void ResponsesStore::put(const std::string& id, StoredResponse stored) {
  std::lock_guard lock(mutex_);
  if (by_id_.insert_or_assign(id, std::move(stored)).second) {
    oldest_first_.push_back(id);
  } else {
    // Replaced: it is now the most recent.
    std::erase(oldest_first_, id);
    oldest_first_.push_back(id);
  }
  while (oldest_first_.size() > kCapacity) {
    by_id_.erase(oldest_first_.front());
    oldest_first_.pop_front();
  }
}

std::optional<StoredResponse> ResponsesStore::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

bool ResponsesStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (by_id_.erase(id) == 0) return false;
  std::erase(oldest_first_, id);
  return true;
}

}  // namespace mlx_cpp::server
