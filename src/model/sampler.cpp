#include "model/sampler.h"

#include <mlx/ops.h>
#include <mlx/random.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();

mx::array scalar_like(double value, const mx::array& like) {
  return mx::array(static_cast<float>(value), like.dtype());
}

mx::array top_p_filter(const mx::array& logprobs, float top_p) {
  auto sorted = mx::sort(logprobs, -1);
  auto probs = mx::exp(mx::astype(sorted, mx::float32));
  auto mass_above = mx::cumsum(probs, -1, /*reverse=*/true, /*inclusive=*/false);
  const int rows = probs.shape(0);
  auto first = [&](const mx::array& a) { return mx::slice(a, {0, 0}, {rows, 1}); };
  auto total_mass = mx::add(first(mass_above), first(probs));
  auto dropped =
      mx::greater_equal(mass_above, mx::multiply(scalar_like(top_p, total_mass), total_mass));
  auto num_dropped = mx::sum(dropped, -1, /*keepdims=*/true);
  auto threshold = mx::take_along_axis(sorted, num_dropped, -1);
  return mx::where(mx::less(logprobs, threshold), scalar_like(-kInfinity, logprobs), logprobs);
}

mx::array min_p_filter(const mx::array& logprobs, float min_p, int min_tokens_to_keep) {
  auto top = mx::max(logprobs, -1, /*keepdims=*/true);
  auto scaled_min_p = mx::add(top, scalar_like(std::log(double(min_p)), top));
  auto remove = mx::less(logprobs, scaled_min_p);
  if (min_tokens_to_keep > 1) {
    auto top_indices = mx::argpartition(logprobs, -min_tokens_to_keep, -1);
    const int vocab = logprobs.shape(-1);
    top_indices =
        mx::slice(top_indices, {0, vocab - min_tokens_to_keep}, {top_indices.shape(0), vocab});
    remove = mx::put_along_axis(remove, top_indices, mx::array(false), -1);
  }
  return mx::where(remove, scalar_like(-kInfinity, logprobs), logprobs);
}

mx::array top_k_filter(const mx::array& logprobs, int top_k) {
  const int vocab = logprobs.shape(-1);
  auto order = mx::argpartition(mx::negative(logprobs), top_k - 1, -1);
  auto masked = mx::slice(order, {0, top_k}, {order.shape(0), vocab});
  return mx::put_along_axis(logprobs, masked, mx::array(-kInfinity, logprobs.dtype()), -1);
}

uint64_t clock_seed() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

void validate_sampler_options(const SamplerOptions& options, int vocab_size) {
  auto fail = [](const std::string& what) { throw Error("sampler: " + what); };
  if (!(options.temperature >= 0) || !std::isfinite(options.temperature))
    fail("temperature must be a finite number >= 0");
  if (!(options.top_p > 0 && options.top_p <= 1)) fail("top_p must be in (0, 1]");
  if (!(options.min_p >= 0 && options.min_p <= 1)) fail("min_p must be in [0, 1]");
  if (options.top_k < 0 || options.top_k >= vocab_size)
    fail("top_k must be in [0, " + std::to_string(vocab_size) + ")");
  if (options.min_tokens_to_keep < 1) fail("min_tokens_to_keep must be >= 1");
}

Sampler::Sampler(const SamplerOptions& options)
    : options_(options), key_(mx::random::key(options.seed.value_or(clock_seed()))) {
  if (options_.temperature == 0) return;
  if (options_.top_p > 0 && options_.top_p < 1) {
    float top_p = options_.top_p;
    filters_.push_back(Graph([top_p](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      return {top_p_filter(in[0], top_p)};
    }));
  }
  if (options_.min_p != 0) {
    float min_p = options_.min_p;
    int keep = options_.min_tokens_to_keep;
    filters_.push_back(
        Graph([min_p, keep](const std::vector<mx::array>& in) -> std::vector<mx::array> {
          return {min_p_filter(in[0], min_p, keep)};
        }));
  }
  if (options_.top_k > 0) {
    int top_k = options_.top_k;
    filters_.push_back(Graph([top_k](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      return {top_k_filter(in[0], top_k)};
    }));
  }
}

mx::array Sampler::operator()(const mx::array& logprobs) {
  if (options_.temperature == 0) return mx::argmax(logprobs, -1);
  return draw(draw_weights(logprobs));
}

mx::array Sampler::draw_weights(const mx::array& logprobs) const {
  auto filtered = logprobs;
  for (const auto& filter : filters_) filtered = filter({filtered})[0];
  return mx::multiply(filtered, scalar_like(1.0 / options_.temperature, filtered));
}

// mlx-lm draws with the global random state as an input and output: the
// key is split, one half becomes the next state, the other draws.
mx::array Sampler::next_draw_key() {
  auto [next_key, draw_key] = mx::random::split(key_);
  key_ = next_key;
  return draw_key;
}

mx::array Sampler::draw(const mx::array& weights) {
  return mx::random::categorical(weights, -1, next_draw_key());
}

mx::array Sampler::uniform() {
  return mx::random::uniform({1}, mx::float32, next_draw_key());
}

}  // namespace mlx_cpp
