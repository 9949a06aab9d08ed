#include "server/metrics.h"

#include <sstream>

namespace mlx_cpp::server {

void Metrics::record_request(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::record_generation(int prompt_tokens, int completion_tokens, int cached_tokens,
                                double time_to_first_token_seconds,
                                double generation_tokens_per_second) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  completion_tokens_ += completion_tokens;
  cached_tokens_ += cached_tokens;
  ++generations_;
  time_to_first_token_sum_ += time_to_first_token_seconds;
  last_tokens_per_second_ = generation_tokens_per_second;
}

void Metrics::record_speculation(const std::string& source, int proposed, int accepted, int steps) {
  std::lock_guard lock(mutex_);
  auto& drafts = drafts_[source];
  drafts.proposed += proposed;
  drafts.accepted += accepted;
  drafts.steps += steps;
}

void Metrics::record_cancelled_generation() {
  std::lock_guard lock(mutex_);
  ++cancelled_generations_;
}

namespace {

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

std::string Metrics::render(const EngineLoad& load) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  family(out, "mlx_cpp_requests_total", "counter", "HTTP requests by route and status.");
  long long errors = 0;
  for (const auto& [key, count] : requests_) {
    out << "mlx_cpp_requests_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} "
        << count << '\n';
    if (key.second >= 400) errors += count;
  }
  family(out, "mlx_cpp_errors_total", "counter", "HTTP responses with status >= 400.");
  out << "mlx_cpp_errors_total " << errors << '\n';
  family(out, "mlx_cpp_prompt_tokens_total", "counter", "Prompt tokens of finished generations.");
  out << "mlx_cpp_prompt_tokens_total " << prompt_tokens_ << '\n';
  family(out, "mlx_cpp_cached_prompt_tokens_total", "counter",
         "Prompt tokens reused from the conversation cache.");
  out << "mlx_cpp_cached_prompt_tokens_total " << cached_tokens_ << '\n';
  family(out, "mlx_cpp_completion_tokens_total", "counter", "Generated tokens.");
  out << "mlx_cpp_completion_tokens_total " << completion_tokens_ << '\n';
  family(out, "mlx_cpp_generations_cancelled_total", "counter",
         "Generations stopped before their answer was written (client gone, server stopping).");
  out << "mlx_cpp_generations_cancelled_total " << cancelled_generations_ << '\n';
  family(out, "mlx_cpp_time_to_first_token_seconds", "summary",
         "From request arrival (queueing included) to the first generated text.");
  out << "mlx_cpp_time_to_first_token_seconds_sum " << time_to_first_token_sum_ << '\n'
      << "mlx_cpp_time_to_first_token_seconds_count " << generations_ << '\n';
  family(out, "mlx_cpp_generation_tokens_per_second", "gauge",
         "Decode speed of the last finished generation.");
  out << "mlx_cpp_generation_tokens_per_second " << last_tokens_per_second_ << '\n';
  family(out, "mlx_cpp_queue_depth", "gauge", "Requests waiting for the engine thread.");
  out << "mlx_cpp_queue_depth " << load.queued << '\n';
  family(out, "mlx_cpp_requests_active", "gauge", "Requests waiting or generating.");
  out << "mlx_cpp_requests_active " << load.active << '\n';
  // The same numbers as GET /stats.
  auto gauge = [&out](const char* name, const char* help, auto value) {
    family(out, name, "gauge", help);
    out << name << ' ' << value << '\n';
  };
  const auto& s = load.scheduler;
  gauge("mlx_cpp_sequences_waiting", "Sequences queued in the scheduler.", s.waiting);
  gauge("mlx_cpp_sequences_prefilling", "Sequences prefilling their prompt.", s.prefilling);
  gauge("mlx_cpp_sequences_decoding", "Sequences generating.", s.decoding);
  gauge("mlx_cpp_sequences_speculating", "Of those generating, sequences taking speculative steps.",
        s.speculating);
  family(out, "mlx_cpp_speculative_shared_verifies_total", "counter",
         "Forwards that verified several speculating sequences' drafts at once.");
  out << "mlx_cpp_speculative_shared_verifies_total " << s.shared_verifies << '\n';
  gauge("mlx_cpp_memory_budget_bytes", "Memory budget (0: none).", s.memory_budget);
  gauge("mlx_cpp_weight_bytes", "Bytes of model weights.", s.weight_bytes);
  gauge("mlx_cpp_adapter_bytes", "Bytes of mounted adapters.", s.resident_bytes);
  gauge("mlx_cpp_kv_cache_bytes", "Cache bytes of running sequences.", s.kv_bytes);
  gauge("mlx_cpp_kv_cache_reserved_bytes", "Cache bytes reserved for running sequences.",
        s.kv_reserved_bytes);
  gauge("mlx_cpp_prefix_cache_bytes", "Bytes held by the prefix cache.", s.prefix_cache_bytes);
  gauge("mlx_cpp_prefix_cache_entries", "Entries of the prefix cache.", s.prefix_cache_entries);
  if (!drafts_.empty()) {
    auto per_source = [&](const char* name, const char* type, const char* help, auto value) {
      family(out, name, type, help);
      for (const auto& [source, drafts] : drafts_)
        out << name << "{source=\"" << source << "\"} " << value(drafts) << '\n';
    };
    per_source("mlx_cpp_draft_tokens_proposed_total", "counter",
               "Speculative decoding: tokens proposed by each draft source.",
               [](const Drafts& d) { return d.proposed; });
    per_source("mlx_cpp_draft_tokens_accepted_total", "counter",
               "Speculative decoding: proposed tokens the verify accepted.",
               [](const Drafts& d) { return d.accepted; });
    per_source("mlx_cpp_draft_acceptance_rate", "gauge",
               "Speculative decoding: accepted / proposed tokens.", [](const Drafts& d) {
                 return d.proposed ? double(d.accepted) / double(d.proposed) : 0.0;
               });
    per_source("mlx_cpp_draft_mean_accepted_length", "gauge",
               "Speculative decoding: accepted tokens per verify.", [](const Drafts& d) {
                 return d.steps ? double(d.accepted) / double(d.steps) : 0.0;
               });
  }
  return out.str();
}

nlohmann::ordered_json stats_body(const EngineLoad& load) {
  const auto& s = load.scheduler;
  return {{"requests", {{"queued", load.queued}, {"active", load.active}}},
          {"sequences",
           {{"waiting", s.waiting},
            {"prefilling", s.prefilling},
            {"decoding", s.decoding},
            {"speculating", s.speculating}}},
          {"memory",
           {{"budget_bytes", s.memory_budget},
            {"weight_bytes", s.weight_bytes},
            {"adapter_bytes", s.resident_bytes},
            {"kv_cache_bytes", s.kv_bytes},
            {"kv_cache_reserved_bytes", s.kv_reserved_bytes}}},
          {"prefix_cache", {{"bytes", s.prefix_cache_bytes}, {"entries", s.prefix_cache_entries}}},
          {"ssd_cache", s.ssd_cache_enabled
                            ? nlohmann::ordered_json{{"files", s.ssd_cache.files},
                                                     {"bytes", s.ssd_cache.bytes},
                                                     {"written", s.ssd_cache.written},
                                                     {"write_failures", s.ssd_cache.write_failures},
                                                     {"dropped", s.ssd_cache.dropped},
                                                     {"hits", s.ssd_cache.hits},
                                                     {"rejected", s.ssd_cache.rejected}}
                            : nlohmann::ordered_json(nullptr)}};
}

}  // namespace mlx_cpp::server
