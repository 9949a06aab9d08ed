// attention_fast: softmax(scale * q k^T + mask) v for any number of query
// rows (prefill and decode).
//
// Work is split into tasks of (batch, KV head, block of query rows, chunk of
// keys). A task scores all its query vectors (the query heads sharing the KV
// head times the block's rows) against blocks of keys, so each key and value
// row is converted to float32 once per task instead of once per query row,
// and keeps an online (flash) softmax per query vector: running max, running
// sum and the unnormalized weighted sum of v. Prefill has enough row blocks
// to fill the threads with one chunk (all keys); decode splits the keys into
// chunks (flash-decoding) whose partial softmaxes are merged at the end.
// Causal rows stop at their last visible key, and keys that a bool mask
// hides from every row of a block are skipped, so masked triangles and
// windows cost nothing.
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/attention_rows.h"
#include "kernels/eager.h"
#include "kernels/gpu/decode_attention.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "attention_fast";
constexpr int kKeyBlock = 64;   // keys scored at once; a multiple of 16
constexpr int kMinChunk = 128;  // keys per task when the keys are split
// Query vectors (query heads x rows) sharing each key and value load: the
// larger, the better the per-key conversion and transposition amortize;
// 144 is a multiple of the matmul tile's rows (6 on AVX2, 8 on AVX-512)
// whenever the group size divides it, and measured fastest among 64 to 288.
constexpr int kQueryVectorsPerTask = 144;
// Below this many query vectors, scores are dot products with key rows;
// from it on, a tile matmul against the transposed key block, whose
// transposition the query vectors then amortize.
constexpr int kMinVectorsForTiledScores = 8;

// A mask broadcast to [B, Hq, L, S] (any strides), applied to score rows.
class MaskRows {
 public:
  explicit MaskRows(const mx::array& mask)
      : mask_(mask),
        strides_{mask.strides()[0], mask.strides()[1], mask.strides()[2], mask.strides()[3]},
        boolean_(mask.dtype() == mx::bool_) {}

  bool boolean() const { return boolean_; }

  // scores[j] for keys first + j, j < count: hidden ones become -FLT_MAX
  // (the stock op's finfo.min), or the additive mask is added.
  void apply(int b, int head, int row, int first, int count, float* scores) const {
    const std::int64_t base = row_offset(b, head, row) + first * strides_[3];
    if (boolean_) {
      const bool* visible = mask_.data<bool>();
      for (int j = 0; j < count; ++j)
        if (!visible[base + j * strides_[3]]) scores[j] = -FLT_MAX;
      return;
    }
    const ScalarType type = scalar_type_of(mask_.dtype());
    for (int j = 0; j < count; ++j) {
      float add;
      qmm::load_as_float(mask_.data<void>(), type, base + j * strides_[3], 1, &add);
      scores[j] += add;
    }
  }

  // Widens [begin, end) to hold the visible keys of one bool mask row among
  // keys [first, last); false when the row has none there.
  bool widen_to_visible(int b, int head, int row, int first, int last, int& begin, int& end) const {
    const bool* visible = mask_.data<bool>() + row_offset(b, head, row);
    int j = first;
    while (j < last && !visible[j * strides_[3]]) ++j;
    if (j == last) return false;
    int k = last - 1;
    while (!visible[k * strides_[3]]) --k;
    begin = std::min(begin, j);
    end = std::max(end, k + 1);
    return true;
  }

 private:
  std::int64_t row_offset(int b, int head, int row) const {
    return b * strides_[0] + head * strides_[1] + row * strides_[2];
  }

  const mx::array& mask_;
  std::int64_t strides_[4];
  bool boolean_;
};

struct Geometry {
  int B, Hq, Hkv, L, S, D, Dv, group;
  bool causal;
  int rows_per_block, row_blocks;  // query rows per task
  int chunk, chunks;               // keys per task

  // Query row `row` sees keys [0, visible_keys(row)) under causal masking.
  int visible_keys(int row) const { return causal ? S - L + row + 1 : S; }
};

// Attends over the first key_count positions of k and v.
Geometry plan(const mx::array& q, const AttentionRows& keys, const AttentionRows& values,
              bool causal, int key_count) {
  Geometry g{q.shape(0), q.shape(1), keys.heads(),   q.shape(2),
             key_count,  q.shape(3), values.width(), q.shape(1) / keys.heads(),
             causal};
  g.rows_per_block = std::min(g.L, (kQueryVectorsPerTask + g.group - 1) / g.group);
  g.row_blocks = (g.L + g.rows_per_block - 1) / g.rows_per_block;
  const int blocks = g.B * g.Hkv * g.row_blocks;
  const int wanted_tasks = ThreadPool::shared().thread_count() * 2;
  g.chunks = std::clamp((wanted_tasks + blocks - 1) / blocks, 1, std::max(1, g.S / kMinChunk));
  g.chunk = (g.S + g.chunks - 1) / g.chunks;
  g.chunks = (g.S + g.chunk - 1) / g.chunk;
  return g;
}

// Online-softmax state of query vectors (all rows of a task, or the
// partials of every row and chunk): max and sum of exp(score - max), and
// the sum of v weighted by exp(score - max), [rows][Dv].
struct SoftmaxState {
  std::vector<float> max, sum, weighted_v;

  SoftmaxState(std::size_t rows, int Dv)
      : max(rows, -INFINITY), sum(rows, 0.0f), weighted_v(rows * Dv, 0.0f) {}
};

// Inputs every task reads.
struct AttentionInputs {
  const Geometry& g;
  const StridedRows& queries;
  const AttentionRows &keys, &values;
  std::optional<MaskRows> mask;
  float scale;
};

// One task's query vectors, group x rows of them: vector m is query head
// m / rows of the KV head's group, row first_row + m % rows. attend() runs
// them over a range of keys, keeping their softmax state.
class Task {
 public:
  Task(const AttentionInputs& in, int b, int kv_head, int first_row, int rows)
      : in_(in),
        g_(in.g),
        ops_(vector_ops()),
        b_(b),
        kv_head_(kv_head),
        first_row_(first_row),
        rows_(rows),
        vectors_(in.g.group * rows),
        queries_(static_cast<std::size_t>(vectors_) * g_.D),
        scores_(static_cast<std::size_t>(vectors_) * kKeyBlock),
        keys_(static_cast<std::size_t>(kKeyBlock) * g_.D),
        key_row_(g_.D),
        values_(static_cast<std::size_t>(kKeyBlock) * g_.Dv),
        state_(vectors_, g_.Dv) {
    load_queries();
  }

  const Geometry& geometry() const { return g_; }
  int batch() const { return b_; }
  int vectors() const { return vectors_; }
  int head(int vector) const { return kv_head_ * g_.group + vector / rows_; }
  int row(int vector) const { return first_row_ + vector % rows_; }
  const SoftmaxState& state() const { return state_; }

  // Keys [begin, end) narrowed to those any of the task's rows can see.
  void visible_range(int& begin, int& end) const {
    end = std::min(end, g_.visible_keys(first_row_ + rows_ - 1));
    if (!in_.mask || !in_.mask->boolean() || begin >= end) return;
    int first = end, last = begin;
    for (int m = 0; m < vectors_; ++m) {
      // A row with no visible key here weighs them all alike (as the stock
      // op does), so it needs the whole range.
      if (!in_.mask->widen_to_visible(b_, head(m), row(m), begin, end, first, last)) return;
    }
    begin = first;
    end = last;
  }

  void attend(int begin, int end) {
    for (int first = begin; first < end; first += kKeyBlock) {
      const int count = std::min(kKeyBlock, end - first);
      // The next block's keys and values, asked for while this one is
      // computed (a decode step reads them from memory, once).
      const int next = first + kKeyBlock;
      const int next_count = std::min(kKeyBlock, end - next);
      in_.keys.prefetch_rows(b_, kv_head_, next, next_count);
      in_.values.prefetch_rows(b_, kv_head_, next, next_count);
      score(first, count);
      softmax_update(first, count);
      in_.values.load_rows(b_, kv_head_, first, count, values_.data());
      ops_.matmul_tile(scores_.data(), kKeyBlock, values_.data(), g_.Dv, state_.weighted_v.data(),
                       g_.Dv, vectors_, g_.Dv, count, true);
    }
  }

 private:
  // Scaled once here, so scores need no further multiply; in the basis the
  // keys come in.
  void load_queries() {
    for (int m = 0; m < vectors_; ++m) {
      float* query = queries_.data() + static_cast<std::size_t>(m) * g_.D;
      in_.queries.load_rows(b_, head(m), row(m), 1, query);
      in_.keys.to_row_basis(query);
    }
    ops_.scale(in_.scale, queries_.data(), vectors_ * g_.D);
  }

  // scores_[m][j] = q_m . k_(first + j), j < count.
  void score(int first, int count) {
    float* keys = keys_.data();
    if (vectors_ < kMinVectorsForTiledScores) {  // keys_ as [kKeyBlock][D]
      in_.keys.load_rows(b_, kv_head_, first, count, keys);
      for (int m = 0; m < vectors_; ++m)
        ops_.dot_rows(queries_.data() + m * g_.D, keys, g_.D, g_.D, count,
                      scores_.data() + m * kKeyBlock);
      return;
    }
    // keys_ as [D][kKeyBlock]; columns past `count` up to a multiple of 16
    // are zero so the tile runs on whole vectors.
    const int columns = std::min(kKeyBlock, (count + 15) / 16 * 16);
    for (int j = 0; j < columns; ++j) {
      if (j < count) in_.keys.load_rows(b_, kv_head_, first + j, 1, key_row_.data());
      for (int d = 0; d < g_.D; ++d) keys[d * kKeyBlock + j] = j < count ? key_row_[d] : 0.0f;
    }
    ops_.matmul_tile(queries_.data(), g_.D, keys, kKeyBlock, scores_.data(), kKeyBlock, vectors_,
                     columns, g_.D, false);
  }

  // Masks the block's scores, folds them into each vector's running max and
  // sum, and turns them into the weights exp(score - max) of the values
  // (zero past a row's visible keys).
  void softmax_update(int first, int count) {
    for (int m = 0; m < vectors_; ++m) {
      float* scores = scores_.data() + m * kKeyBlock;
      const int visible = std::clamp(g_.visible_keys(row(m)) - first, 0, count);
      if (in_.mask && visible > 0) in_.mask->apply(b_, head(m), row(m), first, visible, scores);
      float& max = state_.max[m];
      const float new_max = std::max(max, visible > 0 ? ops_.max(scores, visible) : -INFINITY);
      if (new_max == -INFINITY) {  // nothing visible yet (or only -inf additive masks)
        std::fill(scores, scores + count, 0.0f);
        continue;
      }
      const float rescale = std::exp(max - new_max);  // 0 for the first visible block
      const float block_sum = ops_.exp_shifted_sum(scores, new_max, visible);
      std::fill(scores + visible, scores + count, 0.0f);
      state_.sum[m] = state_.sum[m] * rescale + block_sum;
      if (rescale != 1.0f) ops_.scale(rescale, state_.weighted_v.data() + m * g_.Dv, g_.Dv);
      max = new_max;
    }
  }

  const AttentionInputs& in_;
  const Geometry& g_;
  const VectorOps& ops_;
  const int b_, kv_head_, first_row_, rows_, vectors_;
  std::vector<float> queries_;  // [vectors][D], times scale
  std::vector<float> scores_;   // [vectors][kKeyBlock]
  std::vector<float> keys_;     // [kKeyBlock][D], or [D][kKeyBlock] for tiled scores
  std::vector<float> key_row_;  // [D], one key before transposition
  std::vector<float> values_;   // [kKeyBlock][Dv]
  SoftmaxState state_;
};

// Index of query row `row` of head `head` in [B, Hq, L, ...] order.
std::size_t output_row(const Geometry& g, int b, int head, int row) {
  return (static_cast<std::size_t>(b) * g.Hq + head) * g.L + row;
}

// The task saw every key: normalizes its vectors' weighted sums of v and
// stores them. A row whose every score is -inf gets 0 / 0 = NaN, as the
// stock softmax.
void store_outputs(const Task& task, const AttentionRows& values, mx::array& out) {
  const Geometry& g = task.geometry();
  const VectorOps& ops = vector_ops();
  const SoftmaxState& state = task.state();
  std::vector<float> result(g.Dv);
  for (int m = 0; m < task.vectors(); ++m) {
    const float* weighted_v = state.weighted_v.data() + static_cast<std::size_t>(m) * g.Dv;
    std::copy(weighted_v, weighted_v + g.Dv, result.begin());
    ops.scale(1.0f / state.sum[m], result.data(), g.Dv);
    values.from_row_basis(result.data());
    ops.store(result.data(), g.Dv, out.data<void>(), scalar_type_of(out.dtype()),
              output_row(g, task.batch(), task.head(m), task.row(m)) * g.Dv);
  }
}

// The task saw one chunk of the keys: keeps its vectors' partial softmaxes
// for merge_chunks.
void keep_partials(const Task& task, int chunk, SoftmaxState& partials) {
  const Geometry& g = task.geometry();
  const SoftmaxState& state = task.state();
  for (int m = 0; m < task.vectors(); ++m) {
    const std::size_t partial =
        output_row(g, task.batch(), task.head(m), task.row(m)) * g.chunks + chunk;
    partials.max[partial] = state.max[m];
    partials.sum[partial] = state.sum[m];
    const float* weighted_v = state.weighted_v.data() + static_cast<std::size_t>(m) * g.Dv;
    std::copy(weighted_v, weighted_v + g.Dv, partials.weighted_v.data() + partial * g.Dv);
  }
}

// Merges the chunks' partials of each output row (rows [range)) and stores
// the normalized result. A row whose every score is -inf gets 0 / 0 = NaN,
// as the stock softmax.
void merge_chunks(const Geometry& g, const AttentionRows& values, const SoftmaxState& partials,
                  Range range, mx::array& out) {
  const VectorOps& ops = vector_ops();
  std::vector<float> result(g.Dv);
  for (int row = range.begin; row < range.end; ++row) {
    const std::size_t first = static_cast<std::size_t>(row) * g.chunks;
    float max = -INFINITY;
    for (int c = 0; c < g.chunks; ++c) max = std::max(max, partials.max[first + c]);
    float total = 0.0f;
    std::fill(result.begin(), result.end(), 0.0f);
    for (int c = 0; c < g.chunks; ++c) {
      if (partials.max[first + c] == -INFINITY) continue;  // no visible key there
      const float weight = std::exp(partials.max[first + c] - max);
      total += weight * partials.sum[first + c];
      ops.axpy(weight, partials.weighted_v.data() + (first + c) * g.Dv, result.data(), g.Dv);
    }
    ops.scale(1.0f / total, result.data(), g.Dv);
    values.from_row_basis(result.data());
    ops.store(result.data(), g.Dv, out.data<void>(), scalar_type_of(out.dtype()),
              static_cast<std::size_t>(row) * g.Dv);
  }
}

}  // namespace

void run_attention(const mx::array& q, const AttentionRows& keys, const AttentionRows& values,
                   const mx::array* mask, float scale, bool causal, int key_count, mx::array& out) {
  const Geometry g = plan(q, keys, values, causal, key_count);
  const StridedRows queries(q);
  AttentionInputs inputs{g, queries, keys, values, std::nullopt, scale};
  if (mask) inputs.mask.emplace(*mask);
  const std::size_t output_rows = static_cast<std::size_t>(g.B) * g.Hq * g.L;
  // Partials of [output row][chunk], when the keys are split.
  SoftmaxState partials(g.chunks > 1 ? output_rows * g.chunks : 0, g.Dv);

  const int tasks_per_head = g.row_blocks * g.chunks;
  ThreadPool::shared().parallel_for(g.B * g.Hkv * tasks_per_head, [&](int task) {
    const int batch_kv_head = task / tasks_per_head, chunk = task % g.chunks;
    // Last row blocks first: under causal masking they have the most keys.
    const int row_block = g.row_blocks - 1 - task % tasks_per_head / g.chunks;
    const int b = batch_kv_head / g.Hkv, kv_head = batch_kv_head % g.Hkv;
    const int first_row = row_block * g.rows_per_block;
    Task work(inputs, b, kv_head, first_row, std::min(g.rows_per_block, g.L - first_row));
    int begin = chunk * g.chunk, end = std::min(g.S, begin + g.chunk);
    work.visible_range(begin, end);
    work.attend(begin, end);

    if (g.chunks == 1) {
      store_outputs(work, values, out);
    } else {
      keep_partials(work, chunk, partials);
    }
  });
  if (g.chunks > 1) {
    parallel_ranges(static_cast<int>(output_rows), 64,
                    [&](Range range) { merge_chunks(g, values, partials, range, out); });
  }
}

namespace {

void run_attention(const std::vector<mx::array>& in, mx::array& out, float scale, bool causal,
                   int key_count) {
  const StridedRows keys(in[1]), values(in[2]);
  run_attention(in[0], keys, values, in.size() > 3 ? &in[3] : nullptr, scale, causal, key_count,
                out);
}

class AttentionFast : public FallbackPrimitive {
 public:
  AttentionFast(mx::Stream stream, Fallback fallback, float scale, bool causal, bool has_mask)
      : FallbackPrimitive(stream, std::move(fallback)),
        scale_(scale),
        causal_(causal),
        has_mask_(has_mask) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    // q, k, v and the (broadcast) mask are all read in place, any strides.
    dispatch(
        inputs, outputs,
        [scale = scale_, causal = causal_](const Arrays& in, Arrays& out) {
          run_attention(in, out[0], scale, causal, in[1].shape(2));
        },
        0);
  }
  const char* name() const override { return "AttentionFast"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {{inputs[0].shape(0), inputs[0].shape(1), inputs[0].shape(2), inputs[2].shape(3)}};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const AttentionFast&>(other);
    return scale_ == o.scale_ && causal_ == o.causal_ && has_mask_ == o.has_mask_;
  }

 private:
  float scale_;
  bool causal_;
  bool has_mask_;
};

// The mask's shape broadcast with [B, Hq, L, S] must be [B, Hq, L, S].
bool broadcasts_to(const mx::Shape& shape, const mx::Shape& target) {
  if (shape.size() > target.size()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    int size = shape[shape.size() - 1 - i], wanted = target[target.size() - 1 - i];
    if (size != 1 && size != wanted) return false;
  }
  return true;
}

void validate(const mx::array& q, const mx::array& k, const mx::array& v, bool causal,
              const std::optional<mx::array>& mask) {
  std::ostringstream msg;
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4) {
    msg << "q, k, v must be 4-D, got " << q.shape() << ", " << k.shape() << ", " << v.shape();
  } else if (!is_float_dtype(q.dtype()) || !is_float_dtype(k.dtype()) ||
             !is_float_dtype(v.dtype())) {
    msg << "q, k, v must be float32/bfloat16/float16";
  } else if (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) || k.shape(3) != q.shape(3) ||
             v.shape(1) != k.shape(1) || v.shape(2) != k.shape(2)) {
    msg << "shapes q " << q.shape() << ", k " << k.shape() << ", v " << v.shape()
        << " do not agree ([B, Hq, L, D], [B, Hkv, S, D], [B, Hkv, S, Dv])";
  } else {
    describe_attention_problem(msg, q, k.shape(1), k.shape(2), causal, mask);
  }
  if (!msg.str().empty()) reject(kOp, msg.str());
}

// On the GPU, one query token per row with nothing masked (a causal mask
// hides nothing from the newest position) takes the own decode attention,
// each row over its own keys; nullopt where it does not apply.
std::optional<mx::array> gpu_decode_attention(const mx::array& q, const mx::array& k,
                                              const mx::array& v, float scale, bool masked,
                                              const mx::Stream& stream) {
  if (masked || q.ndim() != 4 || q.shape(2) != 1 || k.ndim() != 4 || k.shape(0) != q.shape(0))
    return std::nullopt;
  const int rows = q.shape(0), length = k.shape(2);
  std::vector<mx::array> keys, values;
  for (int b = 0; b < rows; ++b) {
    keys.push_back(mx::slice(k, {b, 0, 0, 0}, {b + 1, k.shape(1), length, k.shape(3)}, stream));
    values.push_back(mx::slice(v, {b, 0, 0, 0}, {b + 1, v.shape(1), length, v.shape(3)}, stream));
  }
  const std::vector<int> lengths(rows, length);
  if (!gpu::decode_attention_covers(q, keys, values, lengths, stream)) return std::nullopt;
  return gpu::decode_attention(q, keys, values, lengths, scale, stream);
}

}  // namespace

void describe_attention_problem(std::ostringstream& msg, const mx::array& q, int kv_heads, int keys,
                                bool causal, const std::optional<mx::array>& mask) {
  if (q.shape(1) % kv_heads != 0) {
    msg << q.shape(1) << " query heads are not a multiple of " << kv_heads << " KV heads";
  } else if (q.shape(2) == 0 || keys == 0) {
    msg << "no query rows or no keys: " << q.shape(2) << " query rows, " << keys << " keys";
  } else if (causal && mask) {
    msg << "causal attention takes no mask array (as the stock op's mode \"causal\")";
  } else if (causal && keys < q.shape(2)) {
    msg << "causal attention needs at least as many keys as query rows, got " << keys
        << " keys for " << q.shape(2) << " rows";
  } else if (mask &&
             (mask->ndim() > 4 || !(mask->dtype() == mx::bool_ || is_float_dtype(mask->dtype())))) {
    msg << "mask must be bool or float with at most 4 dimensions, got " << mask->shape() << " "
        << mask->dtype();
  } else if (mask && !broadcasts_to(mask->shape(), {q.shape(0), q.shape(1), q.shape(2), keys})) {
    msg << "mask " << mask->shape() << " does not broadcast to [B, Hq, L, S] = "
        << mx::Shape{q.shape(0), q.shape(1), q.shape(2), keys};
  }
}

mx::array attention_fast(const mx::array& q, const mx::array& k, const mx::array& v, float scale,
                         bool causal, const std::optional<mx::array>& mask, mx::StreamOrDevice s) {
  validate(q, k, v, causal, mask);
  std::string mode = causal ? "causal" : "";
  if (mask) mode = "array";
  auto fallback = [scale, mode, s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::fast::scaled_dot_product_attention(
        in[0], in[1], in[2], scale, mode, mode == "array" ? std::optional(in[3]) : std::nullopt,
        std::nullopt, false, s)};
  };
  std::vector<mx::array> inputs{q, k, v};
  if (mask) inputs.push_back(*mask);
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) {
    if (auto own = gpu_decode_attention(q, k, v, scale, mask.has_value(), stream)) return *own;
    return fallback(inputs)[0];
  }
  const mx::Shape out_shape{q.shape(0), q.shape(1), q.shape(2), v.shape(3)};
  auto out_type = mx::promote_types(q.dtype(), mx::promote_types(k.dtype(), v.dtype()));
  if (mask)
    inputs[3] = mx::broadcast_to(*mask, {q.shape(0), q.shape(1), q.shape(2), k.shape(2)}, s);
  return mx::array(
      out_shape, out_type,
      std::make_shared<AttentionFast>(stream, fallback, scale, causal, mask.has_value()),
      std::move(inputs));
}

void eager::attention(const mx::array& q, const mx::array& k, const mx::array& v, float scale,
                      int key_count, mx::array& out) {
  run_attention({q, k, v}, out, scale, false, key_count);
}

}  // namespace mlx_cpp::kernels
