#pragma once
// The responses the Responses API keeps (store: true), so that GET and
// DELETE /v1/responses/{id} can find them and previous_response_id can
// continue their conversation. In memory only: a restart forgets them.
#include <cstddef>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

namespace mlx_cpp::server {

struct StoredResponse {
  nlohmann::ordered_json response;  // the whole response object, as GET returns it
  // The items the response ran on (those of the response it continued
  // first), then its own output items: what a follow-up continues from.
  nlohmann::ordered_json conversation;
};

// Thread-safe: HTTP threads store, read and delete concurrently.
class ResponsesStore {
 public:
  // Conversations grow with every turn and are copied into each follow-up,
  // so only the most recent responses are kept, bounding the memory a
  // long-running server spends on them.
  static constexpr std::size_t kCapacity = 256;

  // Adds (or replaces) `id`, dropping the oldest beyond kCapacity.
  void put(const std::string& id, StoredResponse stored);
  std::optional<StoredResponse> find(const std::string& id) const;
  // False when there was no such response.
  bool erase(const std::string& id);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, StoredResponse> by_id_;
  std::deque<std::string> oldest_first_;
};

}  // namespace mlx_cpp::server
