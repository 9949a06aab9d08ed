#include "engine/speculative/draft_schedule.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/model_cache.h"

namespace mlx_cpp {
namespace {

// 2: the first draft of a step timed apart from the later ones.
constexpr int kFormatVersion = 2;
// Draft-model probabilities in tenths; lookup n-gram lengths 1..16 and a
// continued copy, for the first draft and for the later ones.
constexpr int kProbabilityBuckets = 10;
constexpr int kLookupLengths = 17;
// Weight of the newest cost sample in its running average.
constexpr double kCostWeight = 0.2;
// Before any verify was measured, a verify of L tokens is assumed to cost
// 1 + (L - 1) / 2 plain steps (the batched gemv's cost on a 2-core AVX2
// machine; learned from the first verifies on).
constexpr double kPriorExtraPerToken = 0.5;

// A bucket's calibrated acceptance: its share of accepted drafts under a
// Beta(2, 1) prior.
double estimate(double accepted, double tried) {
  return (accepted + 2) / (tried + 3);
}

int bucket_count(DraftKind kind) {
  return kind == DraftKind::draft_model ? kProbabilityBuckets : 2 * kLookupLengths;
}

}  // namespace

DraftSchedule::DraftSchedule(DraftKind kind, std::optional<std::filesystem::path> file)
    : kind_(kind), file_(std::move(file)), buckets_(bucket_count(kind)), verify_(kMaxLength + 1) {
  if (!file_ || !std::filesystem::exists(*file_)) return;
  try {
    std::ifstream stream(*file_);
    const auto json = nlohmann::json::parse(stream);
    if (json.value("version", 0) != kFormatVersion) return;
    const auto& buckets = json.at("buckets");
    if (buckets.size() != buckets_.size()) return;
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      buckets_[b] = {buckets[b].at(0).get<double>(), buckets[b].at(1).get<double>()};
    const auto& verify = json.at("verify_seconds");
    for (std::size_t l = 0; l < verify.size() && l < verify_.size(); ++l)
      verify_[l] = {verify[l].at(0).get<double>(), verify[l].at(1).get<double>()};
    first_draft_ = {json.at("first_draft_seconds").at(0).get<double>(),
                    json.at("first_draft_seconds").at(1).get<double>()};
    later_draft_ = {json.at("later_draft_seconds").at(0).get<double>(),
                    json.at("later_draft_seconds").at(1).get<double>()};
  } catch (const std::exception&) {
    // A damaged calibration is only a lost head start: begin afresh.
    buckets_.assign(bucket_count(kind), Bucket{});
    verify_.assign(kMaxLength + 1, Cost{});
    first_draft_ = later_draft_ = {};
  }
}

DraftSchedule::~DraftSchedule() {
  try {
    save();
  } catch (const std::exception&) {
    // Keeping the calibration is a convenience, never a reason to fail.
  }
}

void DraftSchedule::save() const {
  if (!file_) return;
  nlohmann::json json;
  json["version"] = kFormatVersion;
  json["kind"] = draft_kind_name(kind_);
  for (const auto& b : buckets_) json["buckets"].push_back({b.accepted, b.tried});
  for (const auto& c : verify_) json["verify_seconds"].push_back({c.seconds, c.count});
  json["first_draft_seconds"] = {first_draft_.seconds, first_draft_.count};
  json["later_draft_seconds"] = {later_draft_.seconds, later_draft_.count};
  std::filesystem::create_directories(file_->parent_path());
  write_json_file(*file_, json);
}

int DraftSchedule::bucket(float confidence, int position) const {
  if (kind_ == DraftKind::draft_model)
    return std::clamp(static_cast<int>(confidence * kProbabilityBuckets), 0,
                      kProbabilityBuckets - 1);
  const int length = std::clamp(static_cast<int>(confidence), 1, kLookupLengths) - 1;
  return (position == 0 ? 0 : kLookupLengths) + length;
}

double DraftSchedule::acceptance(float confidence, int position) const {
  const auto& b = buckets_[bucket(confidence, position)];
  return estimate(b.accepted, b.tried);
}

double DraftSchedule::verify_seconds(int length) const {
  length = std::clamp(length, 1, kMaxLength);
  if (verify_[length].count >= 1) return verify_[length].seconds;
  // Extrapolate from the nearest measured lengths (a line through two, a
  // plain step's multiple through one).
  int below = 0, above = 0;
  for (int l = length - 1; l >= 1 && !below; --l)
    if (verify_[l].count >= 1) below = l;
  for (int l = length + 1; l <= kMaxLength && !above; ++l)
    if (verify_[l].count >= 1) above = l;
  if (below && above)
    return verify_[below].seconds +
           (verify_[above].seconds - verify_[below].seconds) * (length - below) / (above - below);
  const int known = below ? below : above;
  if (!known) return 1.0 + kPriorExtraPerToken * (length - 1);  // in plain steps
  int other = 0;
  for (int l = known + (below ? -1 : 1); l >= 1 && l <= kMaxLength && !other; l += below ? -1 : 1)
    if (verify_[l].count >= 1) other = l;
  if (other) {
    const double slope = (verify_[known].seconds - verify_[other].seconds) / (known - other);
    return std::max(verify_[known].seconds + slope * (length - known), 1e-6);
  }
  return verify_[known].seconds * (1.0 + kPriorExtraPerToken * (length - 1)) /
         (1.0 + kPriorExtraPerToken * (known - 1));
}

double DraftSchedule::draft_seconds(int n) const {
  if (n <= 0) return 0;
  const bool first_known = first_draft_.count >= 1, later_known = later_draft_.count >= 1;
  // Either cost stands in for the other until that one is measured.
  const double first = first_known   ? first_draft_.seconds
                       : later_known ? later_draft_.seconds
                                     : 0.0;
  const double later = later_known ? later_draft_.seconds : first;
  return first + later * (n - 1);
}

std::vector<double> DraftSchedule::rates(const std::vector<double>& acceptances, int paid) const {
  std::vector<double> rate;
  double expected = 1, reach = 1;
  // The `paid` drafts already made cost their time whatever is verified
  // (verifying none of them included); each draft beyond them adds its own.
  rate.push_back(expected / (verify_seconds(1) + draft_seconds(paid)));
  for (std::size_t i = 0; i < acceptances.size(); ++i) {
    reach *= acceptances[i];
    expected += reach;
    const int k = static_cast<int>(i) + 1;
    rate.push_back(expected / (verify_seconds(k + 1) + draft_seconds(std::max(k, paid))));
  }
  return rate;
}

bool DraftSchedule::worth_drafting(int limit) {
  // Until a verify of one draft and a step's first draft have been timed,
  // drafting is what measures them (a prior would decide in their stead).
  if (verify_[2].count < 1 || (kind_ == DraftKind::draft_model && first_draft_.count < 1)) {
    plain_steps_in_a_row_ = 0;
    return true;
  }
  // The best case: up to `limit` drafts, each as likely as the likeliest
  // bucket. One draft may not pay where several do (the first carries the
  // cost of catching up).
  double best = 0;
  for (int b = 0; b < (kind_ == DraftKind::draft_model ? kProbabilityBuckets : kLookupLengths); ++b)
    best = std::max(best, estimate(buckets_[b].accepted, buckets_[b].tried));
  const auto rate = rates(std::vector<double>(std::max(limit, 1), best), 0);
  if (*std::max_element(rate.begin() + 1, rate.end()) > rate[0]) {
    plain_steps_in_a_row_ = 0;
    explore_every_ = kExploreEvery;
    return true;
  }
  // Each exploring draft that did not change the verdict doubles the wait
  // for the next (catching a draft model up costs a prefill of what it
  // missed).
  if (++plain_steps_in_a_row_ < explore_every_) return false;
  plain_steps_in_a_row_ = 0;
  explore_every_ = std::min(2 * explore_every_, kMaxExploreEvery);
  return true;
}

std::vector<double> DraftSchedule::acceptances_of(const std::vector<float>& confidence) const {
  std::vector<double> acceptances;
  for (std::size_t i = 0; i < confidence.size(); ++i)
    acceptances.push_back(acceptance(confidence[i], static_cast<int>(i)));
  return acceptances;
}

bool DraftSchedule::worth_another(const std::vector<float>& confidence, int limit) const {
  if (static_cast<int>(confidence.size()) >= limit) return false;
  auto acceptances = acceptances_of(confidence);
  // The drafts to come are assumed as likely as the last; another is
  // worth drafting when verifying more than the drafts so far (up to the
  // limit) beats the best choice among them.
  const int made = static_cast<int>(confidence.size());
  acceptances.resize(limit, acceptances.empty() ? 0.5 : acceptances.back());
  const auto rate = rates(acceptances, made);
  const auto best_so_far = std::max_element(rate.begin(), rate.begin() + made + 1);
  if (*std::max_element(rate.begin() + made + 1, rate.end()) > *best_so_far) return true;
  // As in choose(): where verifying the drafts so far pays, one more is
  // drafted when no verify that long or longer was timed. Otherwise a
  // schedule that has timed one draft a step never times a later draft
  // (priced as the first until then, which carries the catch-up) or a
  // longer verify (extrapolated from a plain step), and can stay at one
  // draft a step where more pay.
  return best_so_far != rate.begin() && untimed_from(made + 2);
}

int DraftSchedule::choose(const std::vector<float>& confidence) const {
  const auto rate = rates(acceptances_of(confidence), static_cast<int>(confidence.size()));
  const int best = static_cast<int>(std::max_element(rate.begin(), rate.end()) - rate.begin());
  // Where verifying pays, one draft more is verified where that length is
  // longer than any timed: beyond them a cost is only extrapolated (from a
  // plain step, which the pipelined decode makes cheaper than any verify,
  // the line overstates it) and later drafts' acceptance may be only the
  // prior, so without trying the schedule could never learn that it pays.
  const int longer = best + 1;
  if (best < 1 || longer >= static_cast<int>(rate.size())) return best;
  return untimed_from(longer + 1) ? longer : best;
}

bool DraftSchedule::untimed_from(int length) const {
  if (length > kMaxLength) return false;
  for (int l = length; l <= kMaxLength; ++l)
    if (verify_[l].count >= 1) return false;
  return true;
}

void DraftSchedule::record_cost(int length, double seconds, int drafted, double first_seconds,
                                double later_seconds) {
  // The first sample of each kind pays one-off costs (buffers allocated
  // for a new shape: a first 2-token verify took 3.9 plain steps on
  // Qwen2.5-1.5B, later ones 1.8) and is left out.
  auto update = [](Cost& cost, double sample) {
    if (cost.count < 0) {
      cost.count = 0;
      return;
    }
    cost.seconds = cost.count == 0 ? sample : cost.seconds + kCostWeight * (sample - cost.seconds);
    cost.count += 1;
  };
  if (seconds >= 0) update(verify_[std::clamp(length, 1, kMaxLength)], seconds);
  if (drafted >= 1 && first_seconds >= 0) update(first_draft_, first_seconds);
  if (drafted >= 2 && later_seconds >= 0) update(later_draft_, later_seconds / (drafted - 1));
}

void DraftSchedule::record_outcome(const std::vector<float>& confidence, int accepted) {
  // A draft after the first rejection was never judged.
  for (int i = 0; i < static_cast<int>(confidence.size()) && i <= accepted; ++i) {
    auto& b = buckets_[bucket(confidence[i], i)];
    b.tried += 1;
    if (i < accepted) b.accepted += 1;
  }
}

std::filesystem::path draft_schedule_file(const std::filesystem::path& model_directory,
                                          DraftKind kind,
                                          const std::filesystem::path& draft_directory) {
  auto name = std::filesystem::weakly_canonical(model_directory).filename().string() + "." +
              draft_kind_name(kind);
  if (!draft_directory.empty())
    name += "." + std::filesystem::weakly_canonical(draft_directory).filename().string();
  return model_cache_root() / "speculative" / (name + ".json");
}

}  // namespace mlx_cpp
