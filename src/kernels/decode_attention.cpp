// decode_attention_fast: one query row per head against a KV cache. The
// sequence is split into chunks (flash-decoding): each task takes one KV
// head and one chunk, scores all the query heads that share that KV head
// (so K and V are read once), and keeps a partial softmax (max, sum,
// weighted sum of V); the partials are merged per query head at the end.
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cfloat>
#include <cmath>
#include <sstream>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "decode_attention_fast";
constexpr int kMinChunk = 128;  // keys per task, at least

// Reads rows of a 4-D array [B, H, S, D] of any strides as float32; what
// does not change per row (strides, type, the SIMD table) is looked up once.
class StridedRows {
 public:
  explicit StridedRows(const mx::array& a)
      : a_(a),
        strides_{a.strides()[0], a.strides()[1], a.strides()[2], a.strides()[3]},
        type_(scalar_type_of(a.dtype())),
        ops_(vector_ops()),
        width_(a.shape(3)) {}

  void load(int b, int h, int s, float* dst) const {
    std::size_t first = b * strides_[0] + h * strides_[1] + s * strides_[2];
    if (strides_[3] == 1) {
      ops_.load(a_.data<void>(), type_, first, width_, dst);
    } else {
      for (int i = 0; i < width_; ++i) {
        qmm::load_as_float(a_.data<void>(), type_, first + i * strides_[3], 1, dst + i);
      }
    }
  }

 private:
  const mx::array& a_;
  std::int64_t strides_[4];
  ScalarType type_;
  const VectorOps& ops_;
  int width_;
};

struct Geometry {
  int B, Hq, Hkv, S, D, Dv, group, chunk, chunks;
};

// The partial softmax of query head `hq` over one chunk.
struct Partial {
  float max;
  float sum;
  float* weighted_v;  // [Dv]
};

// Scores of the `group` query heads over keys [s0, s1), then the partial
// softmax of each; scores is [group][chunk] scratch.
void attend_chunk(const Geometry& g, const mx::array& q, const StridedRows& k, const StridedRows& v,
                  const mx::array* mask, float scale, int b, int kv_head, int s0, int s1,
                  Partial* partials) {
  const VectorOps& ops = vector_ops();
  const int n = s1 - s0;
  std::vector<float> queries(static_cast<std::size_t>(g.group) * g.D), scores(g.group * n);
  std::vector<float> row(std::max(g.D, g.Dv));
  for (int r = 0; r < g.group; ++r) {
    std::size_t q_row = (static_cast<std::size_t>(b) * g.Hq + kv_head * g.group + r) * g.D;
    ops.load(q.data<void>(), scalar_type_of(q.dtype()), q_row, g.D, queries.data() + r * g.D);
  }
  for (int j = 0; j < n; ++j) {
    k.load(b, kv_head, s0 + j, row.data());
    for (int r = 0; r < g.group; ++r) {
      scores[r * n + j] = scale * ops.dot(queries.data() + r * g.D, row.data(), g.D);
    }
  }
  if (mask) {
    std::vector<float> mask_row(g.S);
    const bool boolean = mask->dtype() == mx::bool_;
    for (int r = 0; r < g.group; ++r) {
      const auto& st = mask->strides();
      const std::size_t base = b * st[0] + (kv_head * g.group + r) * st[1];
      for (int j = 0; j < n; ++j) {
        std::size_t at = base + (s0 + j) * st[3];
        float& score = scores[r * n + j];
        if (boolean) {
          if (!mask->data<bool>()[at]) score = -FLT_MAX;  // as the stock op's finfo.min
        } else {
          float add;
          qmm::load_as_float(mask->data<void>(), scalar_type_of(mask->dtype()), at, 1, &add);
          score += add;
        }
      }
    }
  }
  for (int r = 0; r < g.group; ++r) {
    Partial& p = partials[r];
    float* s = scores.data() + r * n;
    p.max = ops.max(s, n);
    std::fill(p.weighted_v, p.weighted_v + g.Dv, 0.0f);
    p.sum = std::isinf(p.max) && p.max < 0 ? 0.0f : ops.exp_shifted_sum(s, p.max, n);
  }
  for (int j = 0; j < n; ++j) {
    v.load(b, kv_head, s0 + j, row.data());
    for (int r = 0; r < g.group; ++r) {
      if (partials[r].sum > 0.0f)
        ops.axpy(scores[r * n + j], row.data(), partials[r].weighted_v, g.Dv);
    }
  }
}

// Merges the chunks' partial softmaxes of one query head into its output.
void merge_partials(const Geometry& g, const Partial* chunk_partials, int stride, float* out) {
  float max = -INFINITY;
  for (int c = 0; c < g.chunks; ++c) max = std::max(max, chunk_partials[c * stride].max);
  float total = 0.0f;
  std::fill(out, out + g.Dv, 0.0f);
  for (int c = 0; c < g.chunks; ++c) {
    const Partial& p = chunk_partials[c * stride];
    if (p.sum == 0.0f) continue;
    float weight = std::exp(p.max - max);
    total += weight * p.sum;
    vector_ops().axpy(weight, p.weighted_v, out, g.Dv);
  }
  vector_ops().scale(1.0f / total, out, g.Dv);
}

void run_decode_attention(const std::vector<mx::array>& in, mx::array& out, float scale,
                          bool has_mask) {
  const mx::array &q = in[0], &k = in[1], &v = in[2];
  Geometry g{q.shape(0), q.shape(1), k.shape(1), k.shape(2), q.shape(3), v.shape(3), 0, 0, 0};
  g.group = g.Hq / g.Hkv;
  const int heads = g.B * g.Hkv;
  const int wanted_tasks = ThreadPool::shared().thread_count() * 2;
  g.chunks = std::clamp((wanted_tasks + heads - 1) / heads, 1, std::max(1, g.S / kMinChunk));
  g.chunk = (g.S + g.chunks - 1) / g.chunks;
  g.chunks = (g.S + g.chunk - 1) / g.chunk;

  // partials[(b, kv_head, chunk)][r], each with its own Dv floats
  const std::size_t partial_count = static_cast<std::size_t>(heads) * g.chunks * g.group;
  std::vector<float> weighted(partial_count * g.Dv);
  std::vector<Partial> partials(partial_count);
  for (std::size_t i = 0; i < partial_count; ++i)
    partials[i].weighted_v = weighted.data() + i * g.Dv;

  StridedRows k_rows(k), v_rows(v);
  const mx::array* mask = has_mask ? &in[3] : nullptr;
  ThreadPool::shared().parallel_for(heads * g.chunks, [&](int task) {
    const int head = task / g.chunks, c = task % g.chunks;
    const int s0 = c * g.chunk, s1 = std::min(g.S, s0 + g.chunk);
    attend_chunk(g, q, k_rows, v_rows, mask, scale, head / g.Hkv, head % g.Hkv, s0, s1,
                 partials.data() + static_cast<std::size_t>(task) * g.group);
  });
  std::vector<float> result(g.Dv);
  for (int head = 0; head < heads; ++head) {
    for (int r = 0; r < g.group; ++r) {
      merge_partials(g, &partials[static_cast<std::size_t>(head) * g.chunks * g.group + r], g.group,
                     result.data());
      std::size_t out_row = (static_cast<std::size_t>(head) * g.group + r) * g.Dv;
      vector_ops().store(result.data(), g.Dv, out.data<void>(), scalar_type_of(out.dtype()),
                         out_row);
    }
  }
}

class DecodeAttentionFast : public FallbackPrimitive {
 public:
  DecodeAttentionFast(mx::Stream stream, Fallback fallback, float scale, bool has_mask)
      : FallbackPrimitive(stream, std::move(fallback)), scale_(scale), has_mask_(has_mask) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    // q is row-contiguous; k, v and the (broadcast) mask are read in place.
    dispatch(
        inputs, outputs,
        [scale = scale_, has_mask = has_mask_](const Arrays& in, Arrays& out) {
          run_decode_attention(in, out[0], scale, has_mask);
        },
        1);
  }
  const char* name() const override { return "DecodeAttentionFast"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    return {{inputs[0].shape(0), inputs[0].shape(1), 1, inputs[2].shape(3)}};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const DecodeAttentionFast&>(other);
    return scale_ == o.scale_ && has_mask_ == o.has_mask_;
  }

 private:
  float scale_;
  bool has_mask_;
};

void validate(const mx::array& q, const mx::array& k, const mx::array& v,
              const std::optional<mx::array>& mask) {
  std::ostringstream msg;
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4) {
    msg << "q, k, v must be 4-D, got " << q.shape() << ", " << k.shape() << ", " << v.shape();
  } else if (!is_float_dtype(q.dtype()) || !is_float_dtype(k.dtype()) ||
             !is_float_dtype(v.dtype())) {
    msg << "q, k, v must be float32/bfloat16/float16";
  } else if (q.shape(2) != 1) {
    msg << "q has " << q.shape(2) << " query rows, expected 1 (decode)";
  } else if (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0) || k.shape(3) != q.shape(3) ||
             v.shape(1) != k.shape(1) || v.shape(2) != k.shape(2)) {
    msg << "shapes q " << q.shape() << ", k " << k.shape() << ", v " << v.shape()
        << " do not agree ([B, Hq, 1, D], [B, Hkv, S, D], [B, Hkv, S, Dv])";
  } else if (q.shape(1) % k.shape(1) != 0) {
    msg << q.shape(1) << " query heads are not a multiple of " << k.shape(1) << " KV heads";
  } else if (k.shape(2) == 0) {
    msg << "the KV cache is empty";
  } else if (mask &&
             (mask->ndim() > 4 || !(mask->dtype() == mx::bool_ || is_float_dtype(mask->dtype())))) {
    msg << "mask must be bool or float with at most 4 dimensions, got " << mask->shape();
  }
  if (!msg.str().empty()) reject(kOp, msg.str());
}

}  // namespace

mx::array decode_attention_fast(const mx::array& q, const mx::array& k, const mx::array& v,
                                float scale, const std::optional<mx::array>& mask,
                                mx::StreamOrDevice s) {
  validate(q, k, v, mask);
  auto fallback = [scale, has_mask = mask.has_value(), s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::fast::scaled_dot_product_attention(
        in[0], in[1], in[2], scale, has_mask ? "array" : "",
        has_mask ? std::optional(in[3]) : std::nullopt, std::nullopt, false, s)};
  };
  std::vector<mx::array> inputs{q, k, v};
  if (mask) inputs.push_back(*mask);
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) return fallback(inputs)[0];
  auto out_type = mx::promote_types(q.dtype(), mx::promote_types(k.dtype(), v.dtype()));
  inputs[0] = row_contiguous(q, s);
  if (mask) inputs[3] = mx::broadcast_to(*mask, {q.shape(0), q.shape(1), 1, k.shape(2)}, s);
  return mx::array({q.shape(0), q.shape(1), 1, v.shape(3)}, out_type,
                   std::make_shared<DecodeAttentionFast>(stream, fallback, scale, mask.has_value()),
                   std::move(inputs));
}

}  // namespace mlx_cpp::kernels
