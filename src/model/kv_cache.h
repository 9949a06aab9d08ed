#pragma once
// Per-layer caches behind one interface, mirroring mlx-lm's KVCache and
// RotatingKVCache so the stock path stays bit-exact. Attention touches a
// cache only through update_and_fetch() and offset(); the cache kind comes
// from the model (make_caches), never from branches in attention. A layer
// that mixes tokens otherwise keeps a state of its own behind the same
// interface (as_recurrent_state()); the engine sees only offsets, trimming,
// sizes, clones and saved states.
#include <mlx/array.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kernels/kernels.h"

namespace mlx_cpp {

// Quantization of cached keys and values along the head dimension:
// mlx-lm's affine kv_bits and kv_group_size, or TurboQuant's codec at
// those bits and groups (kernels/turbo_codec.h).
struct KvQuantization {
  int bits = 8;
  int group_size = 64;
  kernels::KvPacking packing = kernels::KvPacking::affine;
  bool operator==(const KvQuantization&) const = default;
  kernels::KvPackingFormat format() const { return {packing, bits, group_size}; }
};

class QuantizedKvCache;
class RecurrentStateCache;

// One item of a cache's saved state: an array, an integer that mlx-lm
// keeps as a Python int (offsets, sizes), or a Python None (monostate).
using CacheStateItem = std::variant<mlx::core::array, int, std::monostate>;

// A cache's contents as mlx-lm's caches give them (their `state`), its items
// named as mlx.utils.tree_flatten names them ("0", "2", "0.1" for the
// second part of a packed tensor): files of cached prompts
// (model/prompt_cache_file.h) are written from it, and cache_from_state()
// makes the cache again.
struct CacheState {
  // mlx-lm's class: KVCache, RotatingKVCache, QuantizedKVCache or ArraysCache
  std::string kind;
  std::vector<std::pair<std::string, CacheStateItem>> items;
  // The array item named `name`; throws Error where there is none.
  const mlx::core::array& array(const std::string& name) const;
};

// What attention should mask: nothing, the fused causal mode, or an
// explicit boolean mask array (true = attend).
struct AttentionMask {
  enum class Kind { none, causal, array } kind = Kind::none;
  std::optional<mlx::core::array> mask;
};

// Where a fused decode step (model/fused_decode_block.h) puts one token:
// the cache's storage [B, kv_heads, capacity, head_dim], capacity >
// position. The step writes the token at `position` into that storage in
// place and attends over [0, position]; when `copy` is set, another cache
// (a clone) still reads the storage, and the step writes into a copy.
struct DecodeSlot {
  mlx::core::array keys, values;
  int position;
  bool copy;
};

class KvCache {
 public:
  virtual ~KvCache() = default;
  // keys/values: [B, kv_heads, L, head_dim]; returns the full keys/values to
  // attend over (views into the cache storage).
  virtual std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) = 0;
  // Mask for the next `length` query tokens (before update_and_fetch).
  virtual AttentionMask make_mask(int length, std::optional<int> window_size) const = 0;
  // Tokens seen so far (positions for rope).
  virtual int offset() const = 0;
  virtual bool is_trimmable() const = 0;
  // Whether the cache can still be trimmed after `tokens` more tokens.
  virtual bool trimmable_after(int tokens) const = 0;
  // Drops the last n tokens; returns how many were dropped.
  virtual int trim(int n) = 0;
  virtual size_t byte_size() const = 0;
  // The most bytes this cache holds while a sequence grows to `tokens`
  // tokens, its prompt fed in chunks of at most `prefill_chunk`, from the
  // storage it holds now (0 before its first update).
  virtual size_t bytes_for_tokens(int tokens, int prefill_chunk) const = 0;
  // As update_and_fetch for one token, with the keys and values in
  // temporal order except that the `newest_first` newest come first: the
  // order a ring buffer shared by a batch (mlx-lm's BatchRotatingKVCache)
  // holds a row's window in (engine/window_phase.h). Caches without a ring
  // always give temporal order.
  virtual std::pair<mlx::core::array, mlx::core::array> update_and_fetch_in_ring_order(
      const mlx::core::array& keys, const mlx::core::array& values, int newest_first) {
    (void)newest_first;
    return update_and_fetch(keys, values);
  }
  // The sliding window this cache keeps (nullopt: it keeps every token).
  virtual std::optional<int> window() const { return std::nullopt; }
  // A copy of this cache that keeps its keys and values quantized from now
  // on, the tokens it holds quantized too (mlx-lm's to_quantized); null
  // where this kind has no quantized form (sliding windows).
  virtual std::unique_ptr<KvCache> quantized(const KvQuantization&) const { return nullptr; }
  // This cache when it holds its keys and values quantized (attention then
  // reads them packed), else null.
  virtual QuantizedKvCache* as_quantized() { return nullptr; }
  // This cache when it holds a recurrent state (a convolution's, a linear
  // attention's) instead of keys and values (model/recurrent_state_cache.h),
  // else null.
  virtual RecurrentStateCache* as_recurrent_state() { return nullptr; }
  virtual const RecurrentStateCache* as_recurrent_state() const { return nullptr; }
  virtual std::optional<KvQuantization> quantization() const { return std::nullopt; }
  // Storage kind with its parameters, e.g. "kv" or "rotating(max=512,keep=0)";
  // caches with equal signatures can be exchanged between requests.
  virtual std::string signature() const = 0;
  // Arrays to evaluate after a prefill chunk (the cache's state).
  virtual std::vector<mlx::core::array> state() const = 0;
  virtual std::unique_ptr<KvCache> clone() const = 0;
  // The contents as mlx-lm saves them (storage with its spare capacity,
  // offsets, parameters). Throws Error before the first update.
  virtual CacheState saved_state() const = 0;
  // Storage with room for one more token, grown as update_and_fetch would
  // grow it; nullopt where this cache has none to give (its kind, or no
  // storage yet), and the step then takes update_and_fetch.
  virtual std::optional<DecodeSlot> decode_slot() { return std::nullopt; }
  // Takes the slot's storage back from the step, the token written, and
  // counts the token.
  virtual void commit_decode(const mlx::core::array&, const mlx::core::array&) {}
  // The keys' and values' whole storage after the last update, [B,
  // kv_heads, capacity, head_dim], of which the first offset() positions
  // hold the tokens in order; nullopt where this cache holds none or holds
  // it otherwise (a ring, packed codes). A kernel that takes each row's
  // length reads it in place, where the fetched views would be copied.
  virtual std::optional<std::pair<mlx::core::array, mlx::core::array>> storage() const {
    return std::nullopt;
  }
};

// Grows in 256-token steps; trimming only moves the offset.
class StandardKvCache : public KvCache {
 public:
  StandardKvCache() = default;
  // Storage [B, kv_heads, capacity, head_dim] holding `offset` tokens.
  StandardKvCache(const mlx::core::array& keys, const mlx::core::array& values, int offset)
      : keys_(keys), values_(values), offset_(offset) {}
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) override;
  AttentionMask make_mask(int length, std::optional<int> window_size) const override;
  int offset() const override { return offset_; }
  bool is_trimmable() const override { return true; }
  bool trimmable_after(int) const override { return true; }
  int trim(int n) override;
  size_t byte_size() const override;
  size_t bytes_for_tokens(int tokens, int prefill_chunk) const override;
  std::string signature() const override { return "kv"; }
  std::vector<mlx::core::array> state() const override;
  std::unique_ptr<KvCache> clone() const override;
  CacheState saved_state() const override;
  std::unique_ptr<KvCache> quantized(const KvQuantization& quantization) const override;
  std::optional<DecodeSlot> decode_slot() override;
  void commit_decode(const mlx::core::array& keys, const mlx::core::array& values) override;
  std::optional<std::pair<mlx::core::array, mlx::core::array>> storage() const override {
    if (!keys_) return std::nullopt;
    return std::pair{*keys_, *values_};
  }

  static constexpr int kStep = 256;

 private:
  // Grows the storage (in kStep steps) to hold `length` more tokens.
  void reserve(int length, const mlx::core::array& keys, const mlx::core::array& values);
  std::pair<mlx::core::array, mlx::core::array> fetch() const;
  std::optional<mlx::core::array> keys_, values_;
  int offset_ = 0;
  // Set while a clone may read the storage: a fused step must not write
  // into it then. MLX's ops never write into shared buffers, so storage
  // that update_and_fetch or a grow made is this cache's alone.
  mutable bool storage_shared_ = false;
};

// A sliding window of max_size tokens (the first `keep` are never evicted).
// Single tokens go into a ring; multi-token updates are concatenated in
// temporal order, keeping at least max_size tokens of context for each.
class RotatingKvCache : public KvCache {
 public:
  explicit RotatingKvCache(int max_size, int keep = 0);
  // A ring as saved: storage in ring order, tokens seen, next write index.
  RotatingKvCache(int max_size, int keep, const mlx::core::array& keys,
                  const mlx::core::array& values, int offset, int index)
      : max_size_(max_size),
        keep_(keep),
        keys_(keys),
        values_(values),
        offset_(offset),
        index_(index) {}
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch(
      const mlx::core::array& keys, const mlx::core::array& values) override;
  std::pair<mlx::core::array, mlx::core::array> update_and_fetch_in_ring_order(
      const mlx::core::array& keys, const mlx::core::array& values, int newest_first) override;
  std::optional<int> window() const override { return max_size_; }
  AttentionMask make_mask(int length, std::optional<int> window_size) const override;
  int offset() const override { return offset_; }
  bool is_trimmable() const override { return offset_ < max_size_; }
  bool trimmable_after(int tokens) const override { return offset_ + tokens < max_size_; }
  int trim(int n) override;
  size_t byte_size() const override;
  size_t bytes_for_tokens(int tokens, int prefill_chunk) const override;
  std::string signature() const override;
  std::vector<mlx::core::array> state() const override;
  std::unique_ptr<KvCache> clone() const override;
  CacheState saved_state() const override;

  static constexpr int kStep = 256;

 private:
  std::pair<mlx::core::array, mlx::core::array> update_in_place(const mlx::core::array& keys,
                                                                const mlx::core::array& values);
  std::pair<mlx::core::array, mlx::core::array> update_concat(const mlx::core::array& keys,
                                                              const mlx::core::array& values);
  mlx::core::array temporal_order(const mlx::core::array& v) const;
  mlx::core::array trim_front(int trim_size, const mlx::core::array& v,
                              const std::optional<mlx::core::array>& append) const;
  std::pair<mlx::core::array, mlx::core::array> fetch() const;

  int max_size_;
  int keep_;
  std::optional<mlx::core::array> keys_, values_;
  int offset_ = 0;
  int index_ = 0;  // next write position in the ring
};

// A causal boolean mask [length, offset + length] (optionally windowed), as
// mlx-lm's create_causal_mask builds it.
mlx::core::array causal_mask(int length, int offset, std::optional<int> window_size);

// v[..., start:stop, :] along the sequence axis of keys or values
// [B, H, S, D] (a view).
mlx::core::array sequence_slice(const mlx::core::array& v, int start, int stop);

using CacheList = std::vector<std::unique_ptr<KvCache>>;

// What holds for a whole list of per-layer caches (one sequence's).
// Evaluates every cache's state (after a prefill chunk).
void evaluate_cache_state(const CacheList& caches);
bool all_trimmable(const CacheList& caches);
// Every layer's signature, in order.
std::string cache_list_signature(const CacheList& caches);
size_t cache_list_bytes(const CacheList& caches);
CacheList clone_cache_list(const CacheList& caches);

// The cache a saved state describes, its items checked (kinds, names,
// shapes, dtypes, offsets within the storage); throws Error naming what is
// wrong.
std::unique_ptr<KvCache> cache_from_state(const CacheState& state);

}  // namespace mlx_cpp
