#include "model/kv_cache.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>

#include "io/error.h"
#include "model/quantized_kv_cache.h"

namespace mlx_cpp {
namespace mx = mlx::core;
mx::array sequence_slice(const mx::array& v, int start, int stop) {
  return mx::slice(v, {0, 0, start, 0}, {v.shape(0), v.shape(1), stop, v.shape(3)});
}

namespace {

mx::array zeros_like_steps(const mx::array& like, int length) {
  return mx::zeros({like.shape(0), like.shape(1), length, like.shape(3)}, like.dtype());
}

mx::array assign_sequence(const mx::array& target, const mx::array& update, int start) {
  auto stop = target.shape();
  stop[2] = start + update.shape(2);
  return mx::slice_update(target, update, {0, 0, start, 0}, stop);
}

}  // namespace

mx::array causal_mask(int length, int offset, std::optional<int> window_size) {
  auto right = mx::arange(offset + length);
  auto left = offset ? mx::arange(offset, offset + length) : right;
  left = mx::expand_dims(left, 1);
  right = mx::expand_dims(right, 0);
  auto mask = mx::greater_equal(left, right);
  if (window_size)
    mask = mx::logical_and(mask, mx::less(left, mx::add(right, mx::array(*window_size))));
  return mask;
}

// ---- StandardKvCache ------------------------------------------------------

void StandardKvCache::reserve(int length, const mx::array& keys, const mx::array& values) {
  const int previous = offset_;
  if (!keys_ || previous + length > keys_->shape(2)) {
    const int steps = (kStep + length - 1) / kStep;
    auto new_keys = zeros_like_steps(keys, steps * kStep);
    auto new_values = zeros_like_steps(values, steps * kStep);
    if (keys_) {
      if (previous % kStep != 0) {
        keys_ = sequence_slice(*keys_, 0, previous);
        values_ = sequence_slice(*values_, 0, previous);
      }
      keys_ = mx::concatenate({*keys_, new_keys}, 2);
      values_ = mx::concatenate({*values_, new_values}, 2);
    } else {
      keys_ = new_keys;
      values_ = new_values;
    }
    storage_shared_ = false;
  }
}

std::pair<mx::array, mx::array> StandardKvCache::update_and_fetch(const mx::array& keys,
                                                                  const mx::array& values) {
  const int previous = offset_;
  reserve(keys.shape(2), keys, values);
  offset_ += keys.shape(2);
  keys_ = assign_sequence(*keys_, keys, previous);
  values_ = assign_sequence(*values_, values, previous);
  storage_shared_ = false;
  return fetch();
}

std::optional<DecodeSlot> StandardKvCache::decode_slot() {
  if (!keys_) return std::nullopt;
  // The new storage takes its batch, heads, width and dtype from the old.
  auto like = [](const mx::array& storage) { return sequence_slice(storage, 0, 1); };
  reserve(1, like(*keys_), like(*values_));
  return DecodeSlot{*keys_, *values_, offset_, storage_shared_};
}

void StandardKvCache::commit_decode(const mx::array& keys, const mx::array& values) {
  keys_ = keys;
  values_ = values;
  storage_shared_ = false;
  offset_ += 1;
}

std::pair<mx::array, mx::array> StandardKvCache::fetch() const {
  if (offset_ < keys_->shape(2))
    return {sequence_slice(*keys_, 0, offset_), sequence_slice(*values_, 0, offset_)};
  return {*keys_, *values_};
}

AttentionMask StandardKvCache::make_mask(int length, std::optional<int> window_size) const {
  if (window_size) return {AttentionMask::Kind::array, causal_mask(length, offset_, window_size)};
  if (length == 1) return {};
  return {AttentionMask::Kind::causal, std::nullopt};
}

int StandardKvCache::trim(int n) {
  n = std::min(offset_, n);
  offset_ -= n;
  return n;
}

size_t StandardKvCache::byte_size() const {
  return keys_ ? keys_->nbytes() + values_->nbytes() : 0;
}

size_t StandardKvCache::bytes_for_tokens(int tokens, int /*prefill_chunk*/) const {
  // Chunks land in the same step-grown buffer as single tokens.
  if (!keys_) return 0;
  const size_t per_token = byte_size() / keys_->shape(2);
  const size_t capacity = (static_cast<size_t>(tokens) + kStep - 1) / kStep * kStep;
  return per_token * capacity;
}

std::vector<mx::array> StandardKvCache::state() const {
  if (!keys_) return {};
  return {*keys_, *values_};
}

std::unique_ptr<KvCache> StandardKvCache::clone() const {
  storage_shared_ = true;
  return std::make_unique<StandardKvCache>(*this);
}

CacheState StandardKvCache::saved_state() const {
  if (!keys_) throw Error("a KV cache that holds no tokens has no state to save");
  return {"KVCache", {{"0", *keys_}, {"1", *values_}, {"2", offset_}}};
}

std::unique_ptr<KvCache> StandardKvCache::quantized(const KvQuantization& quantization) const {
  // The whole storage is quantized, capacity and all, as mlx-lm does: each
  // token's groups are quantized on their own, so the held tokens' codes
  // are those an update would have written.
  if (!keys_) return std::make_unique<QuantizedKvCache>(quantization);
  return std::make_unique<QuantizedKvCache>(quantization, *keys_, *values_, offset_);
}

// ---- RotatingKvCache ------------------------------------------------------

RotatingKvCache::RotatingKvCache(int max_size, int keep) : max_size_(max_size), keep_(keep) {}

std::string RotatingKvCache::signature() const {
  return "rotating(max=" + std::to_string(max_size_) + ",keep=" + std::to_string(keep_) + ")";
}

mx::array RotatingKvCache::trim_front(int trim_size, const mx::array& v,
                                      const std::optional<mx::array>& append) const {
  std::vector<mx::array> parts;
  if (trim_size > 0) {
    parts.push_back(sequence_slice(v, 0, keep_));
    parts.push_back(sequence_slice(v, trim_size + keep_, v.shape(2)));
  } else {
    parts.push_back(v);
  }
  if (append) parts.push_back(*append);
  return mx::concatenate(parts, 2);
}

std::pair<mx::array, mx::array> RotatingKvCache::update_and_fetch_in_ring_order(
    const mx::array& keys, const mx::array& values, int newest_first) {
  auto [all_keys, all_values] = update_and_fetch(keys, values);
  if (keys.shape(2) != 1) return {all_keys, all_values};  // a chunk: already in temporal order
  auto in_ring_order = [&](const mx::array& fetched) {
    auto temporal = temporal_order(fetched);
    const int count = temporal.shape(2);
    if (newest_first <= 0 || newest_first >= count) return temporal;
    return mx::concatenate({sequence_slice(temporal, count - newest_first, count),
                            sequence_slice(temporal, 0, count - newest_first)},
                           2);
  };
  return {in_ring_order(all_keys), in_ring_order(all_values)};
}

mx::array RotatingKvCache::temporal_order(const mx::array& v) const {
  if (index_ == v.shape(2)) return v;
  if (index_ < offset_)
    return mx::concatenate({sequence_slice(v, 0, keep_), sequence_slice(v, index_, v.shape(2)),
                            sequence_slice(v, keep_, index_)},
                           2);
  return sequence_slice(v, 0, index_);
}

std::pair<mx::array, mx::array> RotatingKvCache::update_concat(const mx::array& keys,
                                                               const mx::array& values) {
  if (!keys_) {
    keys_ = keys;
    values_ = values;
  } else {
    // Temporal order first, so the trim keeps the most recent context.
    keys_ = temporal_order(*keys_);
    values_ = temporal_order(*values_);
    index_ = keys_->shape(2);
    // Up to max_size + L - 1 tokens, so every new token sees max_size context.
    const int trim_size = index_ - max_size_ + 1;
    keys_ = trim_front(trim_size, *keys_, keys);
    values_ = trim_front(trim_size, *values_, values);
  }
  offset_ += keys.shape(2);
  index_ = keys_->shape(2);
  return {*keys_, *values_};
}

std::pair<mx::array, mx::array> RotatingKvCache::update_in_place(const mx::array& keys,
                                                                 const mx::array& values) {
  const int previous = offset_;
  const int length = keys.shape(2);
  if (!keys_ || (previous >= keys_->shape(2) && keys_->shape(2) < max_size_)) {
    const int new_size = std::min(kStep, max_size_ - previous);
    auto new_keys = zeros_like_steps(keys, new_size);
    auto new_values = zeros_like_steps(values, new_size);
    if (keys_) {
      keys_ = mx::concatenate({*keys_, new_keys}, 2);
      values_ = mx::concatenate({*values_, new_values}, 2);
    } else {
      keys_ = new_keys;
      values_ = new_values;
    }
    index_ = previous;
  }
  const int trim_size = keys_->shape(2) - max_size_;
  if (trim_size > 0) {
    keys_ = trim_front(trim_size, *keys_, std::nullopt);
    values_ = trim_front(trim_size, *values_, std::nullopt);
    index_ = max_size_;
  }
  if (index_ == max_size_) index_ = keep_;  // wrap the ring past the kept prefix
  keys_ = assign_sequence(*keys_, keys, index_);
  values_ = assign_sequence(*values_, values, index_);
  offset_ += length;
  index_ += length;
  return fetch();
}

std::pair<mx::array, mx::array> RotatingKvCache::update_and_fetch(const mx::array& keys,
                                                                  const mx::array& values) {
  if (keys.shape(2) == 1) return update_in_place(keys, values);
  return update_concat(keys, values);
}

std::pair<mx::array, mx::array> RotatingKvCache::fetch() const {
  if (offset_ < keys_->shape(2))
    return {sequence_slice(*keys_, 0, offset_), sequence_slice(*values_, 0, offset_)};
  return {*keys_, *values_};
}

AttentionMask RotatingKvCache::make_mask(int length, std::optional<int> window_size) const {
  if (length > 1) {
    const int window = window_size.value_or(max_size_);
    const int offset = std::min(max_size_ - 1, offset_);
    if (offset + length > window)
      return {AttentionMask::Kind::array, causal_mask(length, offset, window)};
    return {AttentionMask::Kind::causal, std::nullopt};
  }
  if (!window_size) return {};
  // A single token only needs a mask when the window is smaller than the ring.
  if (offset_ >= *window_size && max_size_ > *window_size) {
    int index = index_ >= max_size_ ? 0 : index_;
    int mask_size = offset_ < max_size_ ? offset_ + 1 : max_size_;
    auto mask = mx::greater_equal(mx::arange(mask_size), mx::array(mask_size - *window_size));
    return {AttentionMask::Kind::array, mx::roll(mask, index + 1)};
  }
  return {};
}

int RotatingKvCache::trim(int n) {
  n = std::min(offset_, n);
  offset_ -= n;
  index_ -= n;
  return n;
}

size_t RotatingKvCache::byte_size() const {
  return keys_ ? keys_->nbytes() + values_->nbytes() : 0;
}

size_t RotatingKvCache::bytes_for_tokens(int tokens, int prefill_chunk) const {
  if (!keys_) return 0;
  const size_t per_token = byte_size() / keys_->shape(2);
  // Single tokens grow the ring in steps up to the window; a prompt chunk
  // is concatenated to the last max_size - 1 tokens (update_concat), so past
  // the window a sequence briefly holds max_size - 1 + chunk tokens.
  const size_t capacity = (static_cast<size_t>(tokens) + kStep - 1) / kStep * kStep;
  size_t held = std::min<size_t>(capacity, max_size_);
  if (tokens > max_size_) {
    const size_t chunk = static_cast<size_t>(std::max(prefill_chunk, 1));
    held = std::max(held, std::min<size_t>(tokens, max_size_ - 1 + chunk));
  }
  return per_token * held;
}

std::vector<mx::array> RotatingKvCache::state() const {
  if (!keys_) return {};
  return {*keys_, *values_};
}

std::unique_ptr<KvCache> RotatingKvCache::clone() const {
  return std::make_unique<RotatingKvCache>(*this);
}

CacheState RotatingKvCache::saved_state() const {
  if (!keys_) throw Error("a KV cache that holds no tokens has no state to save");
  return {"RotatingKVCache",
          {{"0", *keys_},
           {"1", *values_},
           {"2", offset_},
           {"3", keep_},
           {"4", max_size_},
           {"5", index_}}};
}

// ---- Cache lists -----------------------------------------------------------

void evaluate_cache_state(const CacheList& caches) {
  std::vector<mx::array> state;
  for (const auto& cache : caches)
    for (auto& array : cache->state()) state.push_back(array);
  mx::eval(state);
}

bool all_trimmable(const CacheList& caches) {
  return std::all_of(caches.begin(), caches.end(),
                     [](const auto& cache) { return cache->is_trimmable(); });
}

std::string cache_list_signature(const CacheList& caches) {
  std::string signature;
  for (const auto& cache : caches) signature += cache->signature() + ";";
  return signature;
}

size_t cache_list_bytes(const CacheList& caches) {
  size_t bytes = 0;
  for (const auto& cache : caches) bytes += cache->byte_size();
  return bytes;
}

CacheList clone_cache_list(const CacheList& caches) {
  CacheList clones;
  for (const auto& cache : caches) clones.push_back(cache->clone());
  return clones;
}

}  // namespace mlx_cpp
