#pragma once
// Counters for GET /metrics in Prometheus' text format (version 0.0.4).
// Updated from HTTP threads; every method is thread-safe.
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/scheduler.h"

namespace mlx_cpp::server {

struct EngineLoad {
  size_t queued = 0;  // waiting for the engine thread
  size_t active = 0;  // waiting + running
  SchedulerCounts scheduler;
};

// GET /stats: the engine's memory and rows as JSON.
nlohmann::ordered_json stats_body(const EngineLoad& load);

class Metrics {
 public:
  // route is one of the served routes or "other" (keeps labels bounded).
  void record_request(const std::string& route, int status);
  void record_generation(int prompt_tokens, int completion_tokens, int cached_tokens,
                         double time_to_first_token_seconds, double generation_tokens_per_second);
  // One speculating request's drafts: proposed and accepted tokens over
  // its verify steps, by source ("draft", "prompt-lookup").
  void record_speculation(const std::string& source, int proposed, int accepted, int steps);
  // A generation whose answer was not written to the end: its client went
  // away (a stop button, a closed connection) or the server stopped.
  void record_cancelled_generation();
  std::string render(const EngineLoad& load) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, long long> requests_;  // (route, status) → count
  long long prompt_tokens_ = 0;
  long long completion_tokens_ = 0;
  long long cached_tokens_ = 0;
  long long generations_ = 0;
  long long cancelled_generations_ = 0;
  double time_to_first_token_sum_ = 0;
  double last_tokens_per_second_ = 0;
  struct Drafts {
    long long proposed = 0, accepted = 0, steps = 0;
  };
  std::map<std::string, Drafts> drafts_;  // by source
};

}  // namespace mlx_cpp::server
