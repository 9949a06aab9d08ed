#include "model/dense_transformer.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <algorithm>

#include "kernels/gpu/decode_attention.h"
#include "kernels/kernels.h"
#include "model/activations.h"
#include "model/adapter_binding.h"
#include "model/gated_delta_net.h"
#include "model/layer_masks.h"
#include "model/quantized_attention.h"
#include "model/recurrent_state_cache.h"
#include "model/short_conv.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

mx::array row_of(const mx::array& t, int b) {
  auto start = mx::Shape(t.ndim(), 0);
  auto stop = t.shape();
  start[0] = b;
  stop[0] = b + 1;
  return mx::slice(t, start, stop);
}

struct Attention::Heads {
  mx::array queries, keys, values;
  std::optional<mx::array> gate;  // [B, L, heads * head_dim] (output_gate)
};

Attention::Heads Attention::project_heads(const mx::array& x, const RowAdapters& adapters) const {
  const int batch = x.shape(0), length = x.shape(1);
  // With one row per sequence (decode), [B, 1, H, D] and [B, H, 1, D]
  // share one memory layout: the fast path reshapes instead of
  // transposing, one graph step less per tensor (each step costs
  // microseconds of scheduling per token).
  const bool one_row = kernels == KernelMode::fast && length == 1;
  auto split_heads = [&](const mx::array& t, int heads, const std::optional<Norm>& norm) {
    if (one_row && !norm) return mx::reshape(t, {batch, heads, 1, -1});
    auto shaped = mx::reshape(t, {batch, length, heads, -1});  // [B, L, H, D]
    if (norm) shaped = (*norm)(shaped);
    if (one_row) return mx::reshape(shaped, {batch, heads, 1, -1});
    return mx::transpose(shaped, {0, 2, 1, 3});  // [B, H, L, D]
  };
  auto qkv = Linear::apply_all(x, {&q_proj, &k_proj, &v_proj}, adapters);
  std::optional<mx::array> gate;
  if (output_gate) {  // per head: its queries, then its gate
    auto halves = mx::split(mx::reshape(qkv[0], {batch, length, num_heads, -1}), 2, -1);
    qkv[0] = halves[0];
    gate = mx::reshape(halves[1], {batch, length, -1});
  }
  if (qk_norm_full_width) {
    qkv[0] = (*q_norm)(qkv[0]);
    qkv[1] = (*k_norm)(qkv[1]);
  }
  // Per-head norms act here, on [B, L, H, D], unless they follow rope
  // (attend() applies them then).
  const bool per_head = !qk_norm_full_width && !qk_norm_after_rope;
  const std::optional<Norm> none;
  return {split_heads(qkv[0], num_heads, per_head ? q_norm : none),
          split_heads(qkv[1], num_kv_heads, per_head ? k_norm : none),
          split_heads(qkv[2], num_kv_heads, none), gate};
}

namespace {

// Llama 4's query scale for `length` queries after `offset` tokens, [L, 1]
// in `dtype`, as mlx-lm's _get_llama_4_attn_scale computes it.
mx::array query_position_scale(const QueryPositionScale& scale, int length, int offset,
                               mx::Dtype dtype) {
  auto positions = mx::astype(mx::add(mx::arange(length), mx::array(offset)), mx::float32);
  auto blocks =
      mx::floor(mx::divide(positions, mx::array(float(scale.original_max_position_embeddings))));
  auto scaling = mx::add(mx::array(1.0f), mx::multiply(mx::array(float(scale.beta)),
                                                       mx::log(mx::add(mx::array(1.0f), blocks))));
  return mx::astype(mx::reshape(scaling, {length, 1}), dtype);
}

// gemma2's attention from ops: scores capped by tanh(s / cap) * cap, the
// mask applied as an array, a precise softmax. q [B, H, L, D], k and v
// [B, kv_heads, S, D]; query heads share key heads by a reshape, as
// mlx-lm's module does.
mx::array softcapped_attention(mx::array queries, mx::array keys, mx::array values, float scale,
                               float softcap, const AttentionMask& mask, int offset) {
  const int batch = queries.shape(0), heads = queries.shape(1), length = queries.shape(2),
            head_dim = queries.shape(3), kv_heads = keys.shape(1);
  const int repeats = heads / kv_heads;
  queries = mx::multiply(queries, mx::array(scale, queries.dtype()));
  if (repeats > 1) {
    queries = mx::reshape(queries, {batch, kv_heads, repeats, length, head_dim});
    keys = mx::expand_dims(keys, 2);
    values = mx::expand_dims(values, 2);
  }
  auto scores = mlx_cpp::softcap(mx::matmul(queries, mx::swapaxes(keys, -1, -2)), softcap);
  std::optional<mx::array> mask_array = mask.mask;
  if (mask.kind == AttentionMask::Kind::causal)
    mask_array = causal_mask(length, offset, std::nullopt);
  if (mask.kind != AttentionMask::Kind::none && mask_array) {
    if (mask_array->dtype() == mx::bool_)
      scores =
          mx::where(*mask_array, scores, mx::array(mx::finfo(scores.dtype()).min, scores.dtype()));
    else
      scores = mx::add(scores, *mask_array);
  }
  scores = mx::softmax(scores, -1, /*precise=*/true);
  auto output = mx::matmul(scores, values);
  if (repeats > 1) output = mx::reshape(output, {batch, heads, length, head_dim});
  return output;
}

}  // namespace

Attention::Heads Attention::prepare(const mx::array& queries, mx::array keys, mx::array values,
                                    int offset) const {
  auto rotated = rope.apply(queries, offset);
  keys = rope.apply(keys, offset);
  if (qk_norm_after_rope) {
    rotated = (*q_norm)(rotated);
    keys = (*k_norm)(keys);
  }
  if (plain() && kernels == KernelMode::fast && half_keys_on_fast_path &&
      keys.dtype() == mx::float32) {
    // The fast path keeps float32 keys and values as float16, as llama.cpp's
    // default cache does: half the cache memory and bandwidth for 2^-11
    // relative rounding (the fidelity tests bound the logits).
    keys = mx::astype(keys, mx::float16);
    values = mx::astype(values, mx::float16);
  }
  if (query_position_scale)
    rotated =
        mx::multiply(rotated, mlx_cpp::query_position_scale(*query_position_scale, rotated.shape(2),
                                                            offset, rotated.dtype()));
  return {rotated, keys, values};
}

mx::array Attention::attend(const mx::array& queries, mx::array keys, mx::array values,
                            const AttentionMask& mask, KvCache& cache,
                            std::optional<int> ring_newest_first) const {
  const int offset = cache.offset();
  auto prepared = prepare(queries, std::move(keys), std::move(values), offset);
  auto rotated = prepared.queries;
  keys = prepared.keys;
  values = prepared.values;
  const bool plain = this->plain();
  if (auto* quantized = cache.as_quantized()) {
    auto [packed_keys, packed_values] = quantized->update_and_fetch_packed(keys, values);
    // Only cohere2's cast reaches a quantized cache (quantized_kv_refusal).
    const auto result_type = rotated.dtype();
    const bool cast_queries =
        upcast == AttentionUpcast::queries_when_float16 && rotated.dtype() == mx::float16;
    if (cast_queries) rotated = mx::astype(rotated, mx::float32);
    auto attended = attend_packed(rotated, packed_keys, packed_values, scale, mask,
                                  *quantized->quantization(), kernels == KernelMode::fast);
    return cast_queries ? mx::astype(attended, result_type) : attended;
  }
  auto [all_keys, all_values] =
      ring_newest_first ? cache.update_and_fetch_in_ring_order(keys, values, *ring_newest_first)
                        : cache.update_and_fetch(keys, values);
  if (plain && kernels == KernelMode::fast && mask.kind != AttentionMask::Kind::array &&
      !ring_newest_first)
    if (auto attended = attend_in_place(rotated, cache)) return *attended;
  return attend_fetched(rotated, all_keys, all_values, mask, offset);
}

mx::array Attention::attend_fetched(mx::array queries, mx::array keys, const mx::array& values,
                                    const AttentionMask& mask, int offset) const {
  if (softcap) return softcapped_attention(queries, keys, values, scale, *softcap, mask, offset);
  const auto [mode, mask_array] = fused_attention_mask(mask);
  if (!plain()) {
    const auto result_type = values.dtype();
    const bool cast_queries =
        upcast != AttentionUpcast::queries_when_float16 || queries.dtype() == mx::float16;
    if (cast_queries) queries = mx::astype(queries, mx::float32);
    if (upcast == AttentionUpcast::queries_and_keys) keys = mx::astype(keys, mx::float32);
    auto attended =
        mx::fast::scaled_dot_product_attention(queries, keys, values, scale, mode, mask_array);
    return cast_queries ? mx::astype(attended, result_type) : attended;
  }
  if (kernels != KernelMode::fast)
    return mx::fast::scaled_dot_product_attention(queries, keys, values, scale, mode, mask_array);
  return kernels::attention_fast(queries, keys, values, scale, mode == "causal", mask_array);
}

std::optional<mx::array> Attention::attend_in_place(const mx::array& queries,
                                                    const KvCache& cache) const {
  // One new token of one sequence on the GPU sees its whole cache (a causal
  // mask hides nothing from the newest position): the own decode attention
  // reads the cache's storage as it is, where the fetched view would be
  // copied contiguous first (two more launches a layer).
  if (mx::default_device() != mx::Device::gpu || queries.shape(0) != 1 || queries.shape(2) != 1 ||
      cache.window())
    return std::nullopt;
  const auto storage = cache.storage();
  if (!storage) return std::nullopt;
  const std::vector<mx::array> keys{storage->first}, values{storage->second};
  const std::vector<int> lengths{cache.offset()};
  const auto stream = mx::to_stream(mx::default_device());
  if (!kernels::gpu::decode_attention_covers(queries, keys, values, lengths, stream))
    return std::nullopt;
  return kernels::gpu::decode_attention(queries, keys, values, lengths, scale, stream);
}

mx::array Attention::output(const mx::array& attended, const Heads& heads,
                            const RowAdapters& adapters) const {
  const int batch = attended.shape(0), length = attended.shape(2);
  auto merged = kernels == KernelMode::fast && length == 1  // [B, H, 1, D] -> [B, 1, H * D]
                    ? mx::reshape(attended, {batch, 1, -1})
                    : mx::reshape(mx::transpose(attended, {0, 2, 1, 3}), {batch, length, -1});
  if (heads.gate) merged = mx::multiply(merged, mx::sigmoid(*heads.gate));
  return o_proj(merged, adapters);
}

mx::array Attention::operator()(const mx::array& x, const AttentionMask& mask, KvCache& cache,
                                const RowAdapters& adapters) const {
  auto heads = project_heads(x, adapters);
  return output(attend(heads.queries, heads.keys, heads.values, mask, cache), heads, adapters);
}

void Attention::register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer) {
  sites.add(prefix + "q_proj", layer, q_proj);
  sites.add(prefix + "k_proj", layer, k_proj);
  sites.add(prefix + "v_proj", layer, v_proj);
  sites.add(prefix + "o_proj", layer, o_proj);
}

std::optional<mx::array> Attention::attend_rows_at_once(const Heads& heads,
                                                        const LayerRows& rows) const {
  // The fast path on the GPU, plain attention over standard caches, nothing
  // masked (one new token sees its whole cache).
  if (kernels != KernelMode::fast || mx::default_device() != mx::Device::gpu || !plain())
    return std::nullopt;
  const int count = static_cast<int>(rows.batch.rows.size());
  for (int b = 0; b < count; ++b) {
    auto& cache = rows.cache(b);
    if (rows.masks[b].kind != AttentionMask::Kind::none || cache.as_quantized() || cache.window() ||
        (rows.sliding && rows.batch.rows[b].ring_newest_first))
      return std::nullopt;
  }
  std::vector<mx::array> queries, keys, values, fetched_keys, fetched_values;
  std::vector<int> lengths;
  bool in_place = true;
  for (int b = 0; b < count; ++b) {
    auto& cache = rows.cache(b);
    auto prepared = prepare(row_of(heads.queries, b), row_of(heads.keys, b),
                            row_of(heads.values, b), cache.offset());
    auto [all_keys, all_values] = cache.update_and_fetch(prepared.keys, prepared.values);
    queries.push_back(prepared.queries);
    fetched_keys.push_back(all_keys);
    fetched_values.push_back(all_values);
    lengths.push_back(cache.offset());
    if (auto storage = cache.storage()) {
      keys.push_back(storage->first);
      values.push_back(storage->second);
    } else {
      in_place = false;
    }
  }
  auto all_queries = count == 1 ? queries.front() : mx::concatenate(queries, 0);
  const auto stream = mx::to_stream(mx::default_device());
  if (in_place && kernels::gpu::decode_attention_covers(all_queries, keys, values, lengths, stream))
    return kernels::gpu::decode_attention(all_queries, keys, values, lengths, scale, stream);
  // The caches are updated: each row attends over its fetched keys.
  std::vector<mx::array> attended;
  for (int b = 0; b < count; ++b)
    attended.push_back(kernels::attention_fast(queries[b], fetched_keys[b], fetched_values[b],
                                               scale, /*causal=*/false, std::nullopt));
  return mx::concatenate(attended, 0);
}

std::optional<mx::array> Attention::attend_consecutive_rows(const Heads& heads,
                                                            const LayerRows& rows) const {
  const int count = static_cast<int>(rows.batch.rows.size());
  if (!rows.batch.consecutive_positions || count < 2) return std::nullopt;
  // Runs of rows that share a cache: [begin, end) each.
  std::vector<std::pair<int, int>> runs;
  for (int b = 0; b < count; ++b) {
    if (b > 0 && &rows.cache(b) == &rows.cache(b - 1))
      runs.back().second = b + 1;
    else
      runs.push_back({b, b + 1});
  }
  for (const auto& [begin, end] : runs) {
    auto& cache = rows.cache(begin);
    if (cache.as_quantized() || cache.window() || !cache.storage()) return std::nullopt;
    for (int b = begin; b < end; ++b)
      if (rows.masks[b].kind != AttentionMask::Kind::none ||
          (rows.sliding && rows.batch.rows[b].ring_newest_first))
        return std::nullopt;
  }
  // Written row by row, each write would copy the storage that the rows
  // before it still read (a verify of 4 tokens after 1,200 cost 2.1 plain
  // steps on Qwen2.5-Coder-1.5B, 1.7 after 256): one write of each run's
  // keys, then each row attends over the keys up to its own position, the
  // values its own decode step would read.
  std::vector<mx::array> attended;
  for (const auto& [begin, end] : runs) {
    auto& cache = rows.cache(begin);
    const int offset = cache.offset();
    std::vector<mx::array> queries, keys, values;
    for (int b = begin; b < end; ++b) {
      auto prepared = prepare(row_of(heads.queries, b), row_of(heads.keys, b),
                              row_of(heads.values, b), offset + b - begin);
      queries.push_back(prepared.queries);
      keys.push_back(prepared.keys);
      values.push_back(prepared.values);
    }
    auto [all_keys, all_values] =
        cache.update_and_fetch(mx::concatenate(keys, 2), mx::concatenate(values, 2));
    for (int b = begin; b < end; ++b) {
      const int seen = offset + b - begin + 1;
      attended.push_back(attend_fetched(queries[b - begin], sequence_slice(all_keys, 0, seen),
                                        sequence_slice(all_values, 0, seen), rows.masks[b],
                                        offset + b - begin));
    }
  }
  return mx::concatenate(attended, 0);
}

mx::array Attention::operator()(const mx::array& x, const LayerRows& rows) const {
  if (x.shape(1) != 1) throw std::invalid_argument("[Attention] batch rows take one token each");
  auto heads = project_heads(x, rows.adapters);
  // On the GPU all rows at once, each over its own cache, in one kernel.
  if (auto attended = attend_rows_at_once(heads, rows))
    return output(*attended, heads, rows.adapters);
  if (auto attended = attend_consecutive_rows(heads, rows))
    return output(*attended, heads, rows.adapters);
  // Each row on its own, exactly as a batch of one runs it: its keys and
  // values never meet another row's.
  std::vector<mx::array> attended;
  for (std::size_t b = 0; b < rows.batch.rows.size(); ++b) {
    const int row = static_cast<int>(b);
    const auto& batch_row = rows.batch.rows[b];
    attended.push_back(attend(row_of(heads.queries, row), row_of(heads.keys, row),
                              row_of(heads.values, row), rows.masks[b], rows.cache(b),
                              rows.sliding ? batch_row.ring_newest_first : std::nullopt));
  }
  return output(mx::concatenate(attended, 0), heads, rows.adapters);
}

mx::array TransformerBlock::feed_forward(const mx::array& x, const RowAdapters& adapters) const {
  return moe ? (*moe)(x, adapters) : mlp(x, adapters);
}

template <class Attend>
mx::array TransformerBlock::apply(const mx::array& x, const RowAdapters& adapters,
                                  Attend&& attend) const {
  auto feed_branch = [&](const mx::array& input) { return this->feed_forward(input, adapters); };
  if (layout != BlockLayout::sequential) {  // one norm feeds both branches
    auto normed = (*input_norm)(x);
    auto attended = attend(normed);
    auto fed_forward = feed_branch(normed);
    if (layout == BlockLayout::parallel_branches_first)
      return mx::add(mx::add(attended, fed_forward), x);
    return mx::add(mx::add(x, attended), fed_forward);
  }
  if (!input_norm) {  // post-norm (olmo2): the branches' outputs are normed
    auto h = mx::add(x, (*post_attention_norm)(attend(x)));
    return mx::add(h, (*post_feedforward_norm)(feed_branch(h)));
  }
  auto attended = attend((*input_norm)(x));
  if (pre_feedforward_norm) {  // sandwich norms (gemma 2/3, glm4)
    auto add = [this](const mx::array& a, const mx::array& b) {
      return sandwich_clip ? clip_residual(a, b) : mx::add(a, b);
    };
    auto h = add(x, (*post_attention_norm)(attended));
    auto mlp_out = feed_branch((*pre_feedforward_norm)(h));
    return add(h, (*post_feedforward_norm)(mlp_out));
  }
  // A Python float times a branch: the factor in the branch's dtype.
  auto scaled = [this](const mx::array& branch) {
    return residual_scale ? mx::multiply(branch, mx::array(*residual_scale, branch.dtype()))
                          : branch;
  };
  auto [h, normed] = post_attention_norm->add_then_apply(x, scaled(attended));
  return mx::add(h, scaled(feed_branch(normed)));
}

mx::array TransformerBlock::operator()(const mx::array& x, const AttentionMask& mask,
                                       KvCache& cache, const RowAdapters& adapters) const {
  return apply(x, adapters, [&](const mx::array& normed) {
    return recurrent ? (*recurrent)(normed, *cache.as_recurrent_state(), adapters)
                     : attention(normed, mask, cache, adapters);
  });
}

mx::array TransformerBlock::operator()(const mx::array& x, const LayerRows& rows) const {
  return apply(x, rows.adapters, [&](const mx::array& normed) {
    return recurrent ? (*recurrent)(normed, rows) : attention(normed, rows);
  });
}

DenseTransformer::DenseTransformer(TransformerSpec spec, WeightStore& weights,
                                   const QuantizationConfig& quantization,
                                   const LoadOptions& options)
    // A mixture of experts runs MLX's ops throughout: its routing is
    // discontinuous, and the fast kernels' rounding upstream of a router
    // changes which experts run (logit errors 3-7x the fast path's bound
    // on the tiny test checkpoints), not just the last bits. So does a
    // model with gated DeltaNet layers: their per-head normalizations (the
    // L2 norms of q and k, the gated RMSNorm of the output) amplify any
    // rounding upstream; on the tiny checkpoints the stock path is itself
    // 5-10% of the largest logit away from the float32 forward, and the fast
    // kernels' different (float32) accumulation lands as far from it, past
    // the fast path's bound. The experts' decode matvecs are the exception:
    // their own kernel gives MLX's bits (kernels.h).
    : spec_(std::move(spec)),
      kernels_(spec_.moe || spec_.gated_delta ? KernelMode::stock : options.kernels),
      expert_kernels_(options.kernels) {
  embed_tokens_ = Embedding::load(weights, quantization, "model.embed_tokens", spec_.vocab_size,
                                  spec_.hidden_size, kernels_);
  for (int i = 0; i < spec_.num_layers; ++i)
    layers_.push_back(load_block(weights, quantization, i));
  final_norm_ = Norm::load(weights, "model.norm", spec_.hidden_size, spec_.norm_eps,
                           {spec_.norm_kind, spec_.norm_style, spec_.norm_bias}, kernels_);
  bool tied = spec_.tied_head == TiedHead::tied ||
              (spec_.tied_head == TiedHead::if_head_missing && !weights.contains("lm_head.weight"));
  if (tied)
    weights.discard("lm_head.weight");  // mlx-lm drops a redundant head of tied models
  else
    lm_head_ = Linear::load(weights, quantization, "lm_head", spec_.hidden_size, spec_.vocab_size,
                            spec_.head_bias, kernels_);
  for (int i = 0; i < spec_.num_layers; ++i) {
    const auto prefix = "model.layers." + std::to_string(i) + ".";
    auto& block = layers_[i];
    if (block.recurrent)
      block.recurrent->register_adapter_sites(adapter_sites_, prefix, i);
    else
      block.attention.register_adapter_sites(adapter_sites_, prefix + "self_attn.", i);
    if (block.moe)
      block.moe->register_adapter_sites(adapter_sites_, prefix + "mlp.", i);
    else
      block.mlp.register_adapter_sites(adapter_sites_, prefix + "mlp.", i);
  }
  if (lm_head_) adapter_sites_.add("lm_head", -1, *lm_head_);
  // After the sites are numbered: a fused step adds its projections' adapters.
  for (const auto& block : layers_)
    fused_layers_.push_back(options.fused_decode ? FusedDecodeBlock::make(block) : std::nullopt);
  const size_t hidden = spec_.hidden_size, kv = size_t(spec_.num_kv_heads) * spec_.head_dim;
  const size_t q = size_t(spec_.num_heads) * spec_.head_dim;
  const size_t attention = hidden * (q + 2 * kv) + q * hidden;
  const size_t dense_mlp = (spec_.gated_mlp ? 3 : 2) * hidden * size_t(spec_.intermediate_size);
  size_t moe_mlp = 0;
  if (spec_.moe) {
    const auto& moe = *spec_.moe;
    moe_mlp = hidden * moe.num_experts +
              size_t(moe.num_experts) * 3 * hidden * size_t(moe.intermediate_size) +
              3 * hidden * size_t(moe.shared_intermediate_size);
  }
  parameter_count_ = size_t(spec_.vocab_size) * hidden * (tied ? 1 : 2);
  for (int i = 0; i < spec_.num_layers; ++i) {
    const bool routed = !spec_.layer_is_moe.empty() && spec_.layer_is_moe[i];
    const auto& recurrent = layers_[i].recurrent;
    parameter_count_ +=
        (recurrent ? recurrent->parameter_count() : attention) + (routed ? moe_mlp : dense_mlp);
  }
}

TransformerBlock DenseTransformer::load_block(WeightStore& weights,
                                              const QuantizationConfig& quantization,
                                              int index) const {
  const auto prefix = "model.layers." + std::to_string(index) + ".";
  const int hidden = spec_.hidden_size;
  auto norm = [&](const std::string& name, int dims) {
    return Norm::load(weights, prefix + name, dims, spec_.norm_eps,
                      {spec_.norm_kind, spec_.norm_style, spec_.norm_bias}, kernels_);
  };
  TransformerBlock block;
  block.layout = spec_.layout;
  block.sliding = spec_.layer_is_sliding[index];
  block.residual_scale = spec_.residual_scale;
  block.sandwich_clip = spec_.sandwich_clip;
  const auto mixer = spec_.layer_mixers.empty() ? TokenMixer::attention : spec_.layer_mixers[index];
  if (mixer == TokenMixer::short_conv)
    block.recurrent =
        ShortConv::load(weights, quantization, prefix + "conv.", hidden,
                        spec_.short_conv->kernel_size, spec_.short_conv->bias, kernels_);
  else if (mixer == TokenMixer::gated_delta)
    block.recurrent = GatedDeltaNet::load(weights, quantization, prefix + "linear_attn.", hidden,
                                          *spec_.gated_delta, spec_.norm_eps, kernels_);
  else
    load_attention(weights, quantization, index, block);

  if (!spec_.layer_is_moe.empty() && spec_.layer_is_moe[index])
    block.moe = SparseMoe::load(weights, quantization, prefix + "mlp.", *spec_.moe, hidden,
                                kernels_, expert_kernels_);
  else
    block.mlp = load_mlp(weights, quantization, prefix);
  if (!spec_.post_norms) block.input_norm = norm("input_layernorm", hidden);
  if (spec_.layout == BlockLayout::sequential)
    block.post_attention_norm = norm("post_attention_layernorm", hidden);
  if (spec_.sandwich_norms) block.pre_feedforward_norm = norm("pre_feedforward_layernorm", hidden);
  if (spec_.sandwich_norms || spec_.post_norms)
    block.post_feedforward_norm = norm("post_feedforward_layernorm", hidden);
  return block;
}

void DenseTransformer::load_attention(WeightStore& weights, const QuantizationConfig& quantization,
                                      int index, TransformerBlock& block) const {
  const auto prefix = "model.layers." + std::to_string(index) + ".";
  const int hidden = spec_.hidden_size, head_dim = spec_.head_dim;
  const int q_dims = spec_.num_heads * head_dim, kv_dims = spec_.num_kv_heads * head_dim;
  auto linear = [&](const std::string& name, int in, int out, bool bias) {
    return Linear::load(weights, quantization, prefix + name, in, out, bias, kernels_);
  };
  auto& attention = block.attention;
  attention.output_gate = spec_.attention_output_gate;
  attention.q_proj = linear("self_attn.q_proj", hidden,
                            q_dims * (spec_.attention_output_gate ? 2 : 1), spec_.qkv_bias);
  attention.k_proj = linear("self_attn.k_proj", hidden, kv_dims, spec_.qkv_bias);
  attention.v_proj = linear("self_attn.v_proj", hidden, kv_dims, spec_.qkv_bias);
  attention.o_proj = linear("self_attn.o_proj", q_dims, hidden, spec_.output_bias);
  if (spec_.qk_norm) load_qk_norms(weights, prefix, attention);
  attention.upcast = spec_.attention_upcast;
  attention.softcap = spec_.attention_softcap;
  attention.query_position_scale = spec_.query_position_scale;
  weights.discard(prefix + "self_attn.rotary_emb.inv_freq");
  const auto& rope = block.sliding ? spec_.local_rope : spec_.global_rope;
  const int rope_dims = spec_.rotary_dims.value_or(head_dim);
  if (spec_.layer_uses_rope[index])
    attention.rope = rope.base_as_frequencies
                         ? make_frequency_table_rope(rope_dims, rope.base, rope.traditional)
                         : make_rotary_embedding(rope_dims, rope.base, rope.traditional,
                                                 rope.scaling, spec_.max_position_embeddings);
  if (spec_.layer_uses_rope[index] && rope.input_scale)
    attention.rope.input_scale = rope.input_scale;
  attention.rope.fast_kernel = kernels_ == KernelMode::fast;
  attention.kernels = kernels_;
  attention.half_keys_on_fast_path = !spec_.bidirectional;
  attention.num_heads = spec_.num_heads;
  attention.num_kv_heads = spec_.num_kv_heads;
  attention.scale = spec_.attention_scale;
}

Mlp DenseTransformer::load_mlp(WeightStore& weights, const QuantizationConfig& quantization,
                               const std::string& prefix) const {
  const int hidden = spec_.hidden_size, ffn = spec_.intermediate_size;
  auto linear = [&](const std::string& name, int in, int out, bool bias) {
    return Linear::load(weights, quantization, prefix + name, in, out, bias, kernels_);
  };
  Mlp mlp;
  if (spec_.gated_mlp) mlp.gate_proj = linear("mlp.gate_proj", hidden, ffn, spec_.mlp_bias);
  mlp.up_proj = linear("mlp.up_proj", hidden, ffn, spec_.mlp_bias);
  mlp.down_proj = linear("mlp.down_proj", ffn, hidden, spec_.mlp_bias);
  mlp.activation = spec_.activation;
  mlp.kernels = kernels_;
  if (spec_.activation == MlpActivation::xielu) {
    // mlx-lm squeezes alpha_p and alpha_n at load; beta and eps are scalars.
    auto scalar = [&](const std::string& name, bool squeeze) {
      auto value = weights.take(prefix + "mlp.act_fn." + name,
                                squeeze ? std::nullopt : std::optional(mx::Shape{}));
      if (squeeze && value.size() != 1)
        weights.report(prefix + "mlp.act_fn." + name + " must hold one value, not shape " +
                       describe_shape(value.shape()));
      return squeeze && value.size() == 1 ? mx::reshape(value, {}) : value;
    };
    mlp.xielu = XieluParameters{scalar("alpha_p", true), scalar("alpha_n", true),
                                scalar("beta", false), scalar("eps", false)};
  }
  return mlp;
}

void DenseTransformer::load_qk_norms(WeightStore& weights, const std::string& prefix,
                                     Attention& attention) const {
  const int head_dim = spec_.head_dim;
  attention.qk_norm_full_width = spec_.qk_norm_full_width;
  attention.qk_norm_after_rope = spec_.qk_norm_after_rope;
  auto load = [&](const std::string& name, int heads) {
    const auto path = prefix + "self_attn." + name;
    if (spec_.qk_norm_kind == NormKind::layer_then_weight) {
      // One weight per head, [heads, head_dim], multiplied after the norm.
      const NormShape shape{NormKind::layer_then_weight, NormStyle::weight, false};
      if (!spec_.qk_norm_weights_per_head)
        return Norm::load(weights, path, mx::Shape{heads, head_dim}, spec_.norm_eps, shape,
                          kernels_);
      std::vector<mx::array> rows;
      for (int h = 0; h < heads; ++h)
        rows.push_back(
            weights.take(path + ".norms." + std::to_string(h) + ".weight", mx::Shape{head_dim}));
      return Norm::from_weight(mx::stack(rows), spec_.norm_eps, shape, kernels_);
    }
    const int dims = spec_.qk_norm_full_width ? heads * head_dim : head_dim;
    return Norm::load(weights, path, dims, spec_.norm_eps,
                      {spec_.qk_norm_kind, spec_.norm_style, false}, kernels_);
  };
  attention.q_norm = load("q_norm", spec_.num_heads);
  attention.k_norm = load("k_norm", spec_.num_kv_heads);
}

size_t Attention::bytes() const {
  return q_proj.bytes() + k_proj.bytes() + v_proj.bytes() + o_proj.bytes() +
         (q_norm ? q_norm->bytes() : 0) + (k_norm ? k_norm->bytes() : 0);
}

size_t TransformerBlock::bytes() const {
  return bytes_besides_feed_forward() + (moe ? moe->bytes() : mlp.bytes());
}

size_t TransformerBlock::bytes_per_token() const {
  // A mixture of experts reads the chosen experts' weights only.
  return bytes_besides_feed_forward() + (moe ? moe->bytes_per_token() : mlp.bytes());
}

size_t TransformerBlock::bytes_besides_feed_forward() const {
  size_t total = recurrent ? recurrent->bytes() : attention.bytes();
  for (const auto* norm :
       {&input_norm, &post_attention_norm, &pre_feedforward_norm, &post_feedforward_norm})
    total += *norm ? (*norm)->bytes() : 0;
  return total;
}

int DenseTransformer::fused_layer_count() const {
  return static_cast<int>(std::count_if(fused_layers_.begin(), fused_layers_.end(),
                                        [](const auto& fused) { return fused.has_value(); }));
}

size_t DenseTransformer::weight_bytes() const {
  size_t total = embed_tokens_.bytes() + (lm_head_ ? lm_head_->bytes() : 0);
  for (const auto& block : layers_) total += block.bytes();
  return total + (final_norm_ ? final_norm_->bytes() : 0);
}

size_t DenseTransformer::weight_bytes_per_token() const {
  size_t total = lm_head_ ? lm_head_->bytes() : embed_tokens_.bytes();
  for (const auto& block : layers_) total += block.bytes_per_token();
  return total + (final_norm_ ? final_norm_->bytes() : 0);
}

mx::array DenseTransformer::embed(const mx::array& tokens) const {
  auto h = embed_tokens_.lookup(tokens);  // [B, L, hidden]
  if (spec_.embedding_scale) {
    auto factor = spec_.embedding_scale_in_bf16
                      ? mx::astype(mx::array(*spec_.embedding_scale, mx::bfloat16), h.dtype())
                      : mx::array(*spec_.embedding_scale, h.dtype());
    h = mx::multiply(h, factor);
  }
  return h;
}

mx::array DenseTransformer::head(const mx::array& h, const RowAdapters& adapters) const {
  auto normed = (*final_norm_)(h);
  // Divisions stay divisions (not multiplications by the reciprocal), by
  // Python floats in the operand's dtype, as mlx-lm writes them.
  if (spec_.head_input_divisor)
    normed = mx::divide(normed, mx::array(*spec_.head_input_divisor, normed.dtype()));
  auto logits = lm_head_ ? (*lm_head_)(normed, adapters) : embed_tokens_.as_linear(normed);
  if (spec_.logits_divisor)
    logits = mx::divide(logits, mx::array(*spec_.logits_divisor, logits.dtype()));
  if (spec_.logits_scale)
    logits = mx::multiply(logits, mx::array(*spec_.logits_scale, logits.dtype()));
  if (spec_.final_softcap) logits = softcap(logits, *spec_.final_softcap);
  return logits;
}

std::pair<AttentionMask, AttentionMask> DenseTransformer::masks_of(const CacheList& caches,
                                                                   int length) const {
  return masks_by_layer_kind(caches, layers_.size(), length, spec_.sliding_window,
                             [this](std::size_t i) -> std::optional<bool> {
                               if (!layers_[i].attends()) return std::nullopt;
                               return layers_[i].sliding;
                             });
}

mx::array DenseTransformer::forward(const mx::array& tokens, CacheList& caches,
                                    const AdapterStack* stack) const {
  const auto adapters = RowAdapters::single(stack);
  auto h = embed(tokens);
  const int length = tokens.shape(1);
  const auto [global_mask, sliding_mask] = masks_of(caches, length);
  const bool one_token = tokens.shape(0) == 1 && length == 1;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& mask = layers_[i].sliding ? sliding_mask : global_mask;
    if (one_token && fused_layers_[i] && mask.kind == AttentionMask::Kind::none) {
      if (auto out = (*fused_layers_[i])(h, *caches[i], adapters)) {
        h = *out;
        continue;
      }
    }
    h = layers_[i](h, mask, *caches[i], adapters);
  }
  return head(h, adapters);
}

mx::array DenseTransformer::training_forward(const mx::array& tokens, const AdapterStack* stack,
                                             const TrainingBlockRunner& run_block) const {
  if (!run_block) return LanguageModel::training_forward(tokens, stack);
  const auto adapters = RowAdapters::single(stack);
  auto h = embed(tokens);
  const auto [global_mask, sliding_mask] = masks_of(make_caches(), tokens.shape(1));
  for (size_t i = 0; i < layers_.size(); ++i) {
    // Held by value: a runner may call the block again after this returns
    // (a checkpoint recomputes it in the backward pass).
    TrainingBlock block = [this, i, mask = layers_[i].sliding ? sliding_mask : global_mask](
                              const mx::array& x, const AdapterStack* block_stack) {
      auto cache = make_cache(i);
      return layers_[i](x, mask, *cache, RowAdapters::single(block_stack));
    };
    h = run_block(static_cast<int>(i), h, block);
  }
  return head(h, adapters);
}

mx::array DenseTransformer::hidden_states(const mx::array& tokens,
                                          const std::vector<int>& lengths) const {
  if (tokens.ndim() != 2) throw std::invalid_argument("[hidden_states] tokens must be [B, L]");
  const int rows = tokens.shape(0), length = tokens.shape(1);
  if (!lengths.empty() && static_cast<int>(lengths.size()) != rows)
    throw std::invalid_argument("[hidden_states] one length per row");
  const bool padded = std::any_of(lengths.begin(), lengths.end(),
                                  [length](int row_length) { return row_length != length; });
  const auto adapters = RowAdapters::single(nullptr);
  auto h = embed(tokens);
  auto positions = mx::arange(length);
  auto queries = mx::expand_dims(positions, 1), keys = mx::expand_dims(positions, 0);
  // [B, 1, 1, L]: the keys of each row that are not padding.
  std::optional<mx::array> real_keys;
  if (padded)
    real_keys = mx::reshape(
        mx::less(keys, mx::reshape(mx::array(lengths.data(), {rows}, mx::int32), {rows, 1})),
        {rows, 1, 1, length});
  auto with_real_keys = [&](std::optional<mx::array> mask) -> AttentionMask {
    if (real_keys) mask = mask ? mx::logical_and(*mask, *real_keys) : *real_keys;
    if (!mask) return {};
    return {AttentionMask::Kind::array, *mask};
  };
  AttentionMask global_mask, sliding_mask;
  if (spec_.bidirectional) {
    // Everything attends to everything, a sliding layer within its window
    // on both sides (no mask needed while the window covers the sequence).
    std::optional<mx::array> window;
    if (spec_.sliding_window && length > *spec_.sliding_window)
      window = mx::less(mx::abs(mx::subtract(queries, keys)), mx::array(*spec_.sliding_window));
    global_mask = with_real_keys(std::nullopt);
    sliding_mask = with_real_keys(window);
  } else {
    global_mask = real_keys ? with_real_keys(mx::greater_equal(queries, keys))
                            : AttentionMask{AttentionMask::Kind::causal, std::nullopt};
    sliding_mask = with_real_keys(causal_mask(length, 0, spec_.sliding_window));
  }
  // Fresh full-length caches: the keys of the whole sequence, whatever the
  // layer's window (the mask bounds what a sliding layer sees).
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::unique_ptr<KvCache> cache =
        layers_[i].attends() ? std::make_unique<StandardKvCache>() : make_cache(i);
    h = layers_[i](h, layers_[i].sliding ? sliding_mask : global_mask, *cache, adapters);
  }
  return (*final_norm_)(h);
}

mx::array DenseTransformer::forward_batch(const mx::array& tokens,
                                          const ForwardBatch& batch) const {
  if (tokens.ndim() != 2 || tokens.shape(0) != static_cast<int>(batch.rows.size()) ||
      tokens.shape(1) != 1)
    throw std::invalid_argument("[forward_batch] tokens must be [rows, 1]");
  RowAdapters adapters;
  for (const auto& row : batch.rows) adapters.rows.push_back(row.adapters);
  auto h = embed(tokens);
  const int length = tokens.shape(1);
  std::vector<AttentionMask> global_masks, sliding_masks;
  for (const auto& row : batch.rows) {
    auto [global, sliding] = masks_of(*row.caches, length);
    global_masks.push_back(std::move(global));
    sliding_masks.push_back(std::move(sliding));
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& masks = layers_[i].sliding ? sliding_masks : global_masks;
    if (fused_layers_[i] && !batch.consecutive_positions) {
      // The fused step attends over each whole cache: it needs rows that
      // mask nothing and keep their own order (and caches of their own).
      bool fusable = true;
      std::vector<KvCache*> caches;
      for (std::size_t b = 0; b < batch.rows.size(); ++b) {
        fusable = fusable && masks[b].kind == AttentionMask::Kind::none &&
                  !(layers_[i].sliding && batch.rows[b].ring_newest_first);
        caches.push_back((*batch.rows[b].caches)[i].get());
      }
      if (fusable) {
        if (auto out = (*fused_layers_[i])(h, caches, adapters)) {
          h = *out;
          continue;
        }
      }
    }
    LayerRows rows{batch, i, masks, layers_[i].sliding, adapters};
    h = layers_[i](h, rows);
  }
  return head(h, adapters);
}

std::optional<std::string> DenseTransformer::quantized_kv_refusal(
    const KvQuantization& quantization) const {
  // mlx-lm's modules of these read the fetched keys as one float array.
  const std::string type = spec_.model_type;
  if (spec_.attention_softcap)
    return type +
           "'s attention caps its logits from float keys: quantized KV caches are not "
           "available for it";
  if (spec_.attention_upcast == AttentionUpcast::queries ||
      spec_.attention_upcast == AttentionUpcast::queries_and_keys)
    return type +
           "'s attention casts float keys and values to float32: quantized KV caches "
           "are not available for it";
  if (spec_.head_dim % quantization.group_size != 0)
    return "the KV group size " + std::to_string(quantization.group_size) +
           " does not divide the head dimension " + std::to_string(spec_.head_dim);
  return std::nullopt;
}

std::shared_ptr<const BoundAdapter> DenseTransformer::bind_adapter(const AdapterFiles& files,
                                                                   const std::string& name) const {
  return mlx_cpp::bind_adapter(files, name, adapter_sites_, spec_);
}

std::optional<std::string> DenseTransformer::adapter_training_refusal() const {
  // A trained adapter is saved under the checkpoint's module names; these
  // models' modules are renamed or split at load.
  if (!spec_.weight_names.empty() || !spec_.fused_projections.empty())
    return spec_.model_type + "'s checkpoint names its projections otherwise than mlx-cpp's graph";
  if (spec_.moe) return "adapters on a mixture of experts are not trained here yet";
  if (std::any_of(layers_.begin(), layers_.end(), [](const auto& block) { return block.sliding; }))
    return "adapters on sliding-window models are not trained here yet";
  return std::nullopt;
}

std::unique_ptr<KvCache> DenseTransformer::make_cache(std::size_t index) const {
  const auto& layer = layers_[index];
  if (!layer.attends())
    return std::make_unique<RecurrentStateCache>(layer.recurrent->state_slots());
  if (layer.sliding) return std::make_unique<RotatingKvCache>(spec_.sliding_window.value_or(4096));
  return std::make_unique<StandardKvCache>();
}

CacheList DenseTransformer::make_caches() const {
  CacheList caches;
  for (std::size_t i = 0; i < layers_.size(); ++i) caches.push_back(make_cache(i));
  return caches;
}

}  // namespace mlx_cpp
