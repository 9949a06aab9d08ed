#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace mlx_cpp {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& stop) { return stop.empty(); });
}

std::string StopMatcher::add(const std::string& text) {
  if (matched_) return "";
  pending_ += text;
  size_t earliest = std::string::npos;
  for (const auto& stop : stops_) earliest = std::min(earliest, pending_.find(stop));
  if (earliest != std::string::npos) {
    matched_ = true;
    auto released = pending_.substr(0, earliest);
    pending_.clear();
    return released;
  }
  // Hold back the longest suffix that is a prefix of some stop string.
  size_t hold = 0;
  for (const auto& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, pending_.size());
    for (size_t length = longest; length > hold; --length)
      if (pending_.compare(pending_.size() - length, length, stop, 0, length) == 0) {
        hold = length;
        break;
      }
  }
  auto released = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return released;
}

std::string StopMatcher::flush() {
  if (matched_) return "";
  return std::exchange(pending_, "");
}

}  // namespace mlx_cpp
