#include "model/gemma4_text.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cmath>
#include <stdexcept>

#include "io/error.h"
#include "model/activations.h"
#include "model/adapter_binding.h"
#include "model/dense_transformer.h"
#include "model/layer_masks.h"
#include "model/quantized_attention.h"
#include "model/quantized_kv_cache.h"
#include "model/switch_glu.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

// The mixture of experts beside the MLP (enable_moe_block): Gemma 4's own
// router (top k of the scores of an RMS-normed input, a softmax over them
// times a learned scale per expert) and its experts' geglu, between norms.
struct Gemma4Text::ExpertBranch {
  Linear router;                            // router.proj
  mx::array router_norm = mx::array(0.0f);  // router.scale * hidden^-0.5
  mx::array per_expert_scale = mx::array(0.0f);
  SwitchGlu experts;
  Norm dense_post_norm;      // post_feedforward_layernorm_1, on the MLP's output
  Norm pre_norm, post_norm;  // pre/post_feedforward_layernorm_2, around the experts
  int top_k = 0;
  float eps = 1e-6f;

  std::vector<int> adapter_sites() const {
    auto sites = experts.adapter_sites();
    sites.push_back(router.adapter_site());
    return sites;
  }
  // h [..., hidden] → the experts' weighted sum, post-normed.
  mx::array operator()(const mx::array& h, const RowAdapters& adapters) const {
    auto scores = router(mx::fast::rms_norm(h, router_norm, eps), adapters);
    const int count = experts.experts();
    auto start = mx::Shape(scores.ndim(), 0);
    auto stop = scores.shape();
    start.back() = count - top_k;
    auto indices = mx::slice(mx::argpartition(scores, count - top_k, -1), start, stop);
    auto weights = mx::softmax(mx::take_along_axis(scores, indices, -1), -1);
    weights = mx::multiply(weights, mx::take(per_expert_scale, indices, 0));
    auto routed = experts(pre_norm(h), indices, adapters);
    return post_norm(mx::sum(mx::multiply(mx::expand_dims(weights, -1), routed), -2));
  }
  size_t bytes() const {
    return router.bytes() + router_norm.nbytes() + per_expert_scale.nbytes() + experts.bytes() +
           dense_post_norm.bytes() + pre_norm.bytes() + post_norm.bytes();
  }
  // What one token reads: the router and k of the experts.
  size_t bytes_per_token() const {
    return bytes() - experts.bytes() + experts.bytes() / experts.experts() * top_k;
  }
};

struct Gemma4Text::Layer {
  Gemma4Layer shape;
  Linear q_proj, o_proj;
  std::optional<Linear> k_proj, v_proj;  // layers that own their keys (v: unless k_eq_v)
  Norm q_norm;
  std::optional<Norm> k_norm;
  RotaryEmbedding rope;
  Norm input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;
  Mlp mlp;
  std::optional<Linear> per_layer_input_gate, per_layer_projection;
  std::optional<Norm> post_per_layer_input_norm;
  std::optional<mx::array> layer_scalar;
  std::optional<ExpertBranch> experts;

  // What one token's pass reads (of the experts, k).
  size_t bytes_per_token() const {
    return bytes() - (experts ? experts->bytes() - experts->bytes_per_token() : 0);
  }
  size_t bytes() const {
    size_t total = q_proj.bytes() + o_proj.bytes() + q_norm.bytes() + mlp.bytes();
    for (const auto* linear : {&k_proj, &v_proj, &per_layer_input_gate, &per_layer_projection})
      total += *linear ? (*linear)->bytes() : 0;
    for (const auto* norm :
         {&input_norm, &post_attention_norm, &pre_feedforward_norm, &post_feedforward_norm})
      total += norm->bytes();
    total += k_norm ? k_norm->bytes() : 0;
    total += post_per_layer_input_norm ? post_per_layer_input_norm->bytes() : 0;
    total += experts ? experts->bytes() : 0;
    return total + (layer_scalar ? layer_scalar->nbytes() : 0);
  }
};

namespace {

// Parameters of a projection as mlx-lm counts them (quantized at full size).
size_t parameters_of(const Linear& linear) {
  return size_t(linear.input_dims()) * linear.output_dims() +
         (linear.bias() ? size_t(linear.output_dims()) : 0);
}

// A norm's weight, or none; norms only read their weight.
size_t parameters_of(const Norm& norm) {
  return norm.weight().size();
}

}  // namespace

Gemma4Text::ExpertBranch Gemma4Text::load_experts(WeightStore& weights,
                                                  const QuantizationConfig& quantization,
                                                  const std::string& prefix) const {
  const auto& spec = *config_.experts;
  const int hidden = config_.hidden_size;
  const float eps = config_.norm_eps;
  const NormShape rms{NormKind::rms, NormStyle::weight, false};
  ExpertBranch branch;
  branch.router = Linear::load(weights, quantization, prefix + "router.proj", hidden,
                               spec.num_experts, false, kernels_);
  auto scale = weights.take(prefix + "router.scale", mx::Shape{hidden});
  // scale * hidden ** -0.5: a Python float meeting the weight's dtype.
  branch.router_norm =
      mx::multiply(scale, mx::array(float(std::pow(double(hidden), -0.5)), scale.dtype()));
  branch.per_expert_scale =
      weights.take(prefix + "router.per_expert_scale", mx::Shape{spec.num_experts});
  branch.experts = SwitchGlu::load(weights, quantization, prefix + "experts.switch_glu.",
                                   spec.num_experts, hidden, spec.intermediate_size, false,
                                   MlpActivation::gelu_approx, expert_kernels_);
  branch.dense_post_norm =
      Norm::load(weights, prefix + "post_feedforward_layernorm_1", hidden, eps, rms, kernels_);
  branch.pre_norm =
      Norm::load(weights, prefix + "pre_feedforward_layernorm_2", hidden, eps, rms, kernels_);
  branch.post_norm =
      Norm::load(weights, prefix + "post_feedforward_layernorm_2", hidden, eps, rms, kernels_);
  branch.top_k = spec.top_k;
  branch.eps = eps;
  return branch;
}

Gemma4Text::Gemma4Text(Gemma4Config config, WeightStore& weights,
                       const QuantizationConfig& quantization, KernelMode kernels)
    // The stock path on both paths, as for a mixture of experts
    // (dense_transformer.cpp): every layer renormalizes q, k and v and
    // sandwiches both branches in norms, each rounding to bfloat16 again,
    // and attends at scale 1. On the tiny test checkpoints the stock 8-bit
    // model is itself 9 % of the largest logit away from the same weights
    // in float32 (7 % at 4 bits); the own kernels' float32 accumulation
    // lands as far from it, past the fast path's 5 % bound.
    // The experts' decode matvecs are the exception: their own kernel gives
    // MLX's bits (kernels.h).
    : config_(std::move(config)), expert_kernels_(kernels) {
  const int hidden = config_.hidden_size, layers = static_cast<int>(config_.layers.size());
  const float eps = config_.norm_eps;
  const NormShape rms{NormKind::rms, NormStyle::weight, false};
  auto linear = [&](const std::string& path, int in, int out) {
    return Linear::load(weights, quantization, path, in, out, false, kernels_);
  };
  embed_tokens_ = Embedding::load(weights, quantization, "model.embed_tokens", config_.vocab_size,
                                  hidden, kernels_);
  const int width = config_.per_layer_input_size;
  if (width > 0) {
    embed_tokens_per_layer_ =
        Embedding::load(weights, quantization, "model.embed_tokens_per_layer",
                        config_.vocab_size_per_layer_input, layers * width, kernels_);
    per_layer_model_projection_ =
        linear("model.per_layer_model_projection", hidden, layers * width);
    per_layer_projection_norm_ =
        Norm::load(weights, "model.per_layer_projection_norm", width, eps, rms, kernels_);
  }
  for (int i = 0; i < layers; ++i) {
    const auto prefix = "model.layers." + std::to_string(i) + ".";
    const auto& shape = config_.layers[i];
    Layer layer;
    layer.shape = shape;
    const int queries = config_.num_heads * shape.head_dim, keys = shape.kv_heads * shape.head_dim;
    layer.q_proj = linear(prefix + "self_attn.q_proj", hidden, queries);
    layer.o_proj = linear(prefix + "self_attn.o_proj", queries, hidden);
    layer.q_norm =
        Norm::load(weights, prefix + "self_attn.q_norm", shape.head_dim, eps, rms, kernels_);
    if (shape.owns_kv) {
      layer.k_proj = linear(prefix + "self_attn.k_proj", hidden, keys);
      if (!shape.keys_are_values) layer.v_proj = linear(prefix + "self_attn.v_proj", hidden, keys);
      layer.k_norm =
          Norm::load(weights, prefix + "self_attn.k_norm", shape.head_dim, eps, rms, kernels_);
    } else {
      // mlx-lm drops what a shared layer's checkpoint may still carry.
      for (const char* name : {"k_proj", "v_proj", "k_norm"})
        weights.discard_prefix(prefix + "self_attn." + name + ".");
    }
    const auto& rope = shape.sliding ? config_.sliding_rope : config_.full_rope;
    const float theta = rope.contains("rope_theta") && rope["rope_theta"].is_number()
                            ? rope["rope_theta"].get<float>()
                            : 10000.0f;
    layer.rope = make_rotary_embedding(shape.head_dim, theta, config_.rope_traditional, rope,
                                       config_.max_position_embeddings);
    for (auto [norm, name] : {std::pair{&layer.input_norm, "input_layernorm"},
                              {&layer.post_attention_norm, "post_attention_layernorm"},
                              {&layer.pre_feedforward_norm, "pre_feedforward_layernorm"},
                              {&layer.post_feedforward_norm, "post_feedforward_layernorm"}})
      *norm = Norm::load(weights, prefix + name, hidden, eps, rms, kernels_);
    layer.mlp.gate_proj = linear(prefix + "mlp.gate_proj", hidden, shape.intermediate_size);
    layer.mlp.up_proj = linear(prefix + "mlp.up_proj", hidden, shape.intermediate_size);
    layer.mlp.down_proj = linear(prefix + "mlp.down_proj", shape.intermediate_size, hidden);
    layer.mlp.activation = MlpActivation::gelu_approx;
    layer.mlp.kernels = kernels_;
    if (width > 0) {
      layer.per_layer_input_gate = linear(prefix + "per_layer_input_gate", hidden, width);
      layer.per_layer_projection = linear(prefix + "per_layer_projection", width, hidden);
      layer.post_per_layer_input_norm =
          Norm::load(weights, prefix + "post_per_layer_input_norm", hidden, eps, rms, kernels_);
    }
    if (config_.experts) layer.experts = load_experts(weights, quantization, prefix);
    layer.layer_scalar = weights.take(prefix + "layer_scalar", mx::Shape{1});
    weights.discard(prefix + "self_attn.rotary_emb.inv_freq");
    layers_.push_back(std::move(layer));
  }
  final_norm_ = Norm::load(weights, "model.norm", hidden, eps, rms, kernels_);
  if (config_.tied_head)
    weights.discard("lm_head.weight");
  else
    lm_head_ = linear("lm_head", hidden, config_.vocab_size);

  // The layers are in place: their projections become adapter sites.
  for (int i = 0; i < layers; ++i) {
    const auto prefix = "model.layers." + std::to_string(i) + ".";
    auto& layer = layers_[i];
    adapter_sites_.add(prefix + "self_attn.q_proj", i, layer.q_proj);
    if (layer.k_proj) adapter_sites_.add(prefix + "self_attn.k_proj", i, *layer.k_proj);
    if (layer.v_proj) adapter_sites_.add(prefix + "self_attn.v_proj", i, *layer.v_proj);
    adapter_sites_.add(prefix + "self_attn.o_proj", i, layer.o_proj);
    layer.mlp.register_adapter_sites(adapter_sites_, prefix + "mlp.", i);
    if (layer.per_layer_input_gate)
      adapter_sites_.add(prefix + "per_layer_input_gate", i, *layer.per_layer_input_gate);
    if (layer.per_layer_projection)
      adapter_sites_.add(prefix + "per_layer_projection", i, *layer.per_layer_projection);
    if (layer.experts) {
      adapter_sites_.add(prefix + "router.proj", i, layer.experts->router);
      layer.experts->experts.register_adapter_sites(adapter_sites_, prefix + "experts.switch_glu.",
                                                    i);
    }
  }
  if (lm_head_) adapter_sites_.add("lm_head", -1, *lm_head_);
  adapter_spec_.model_type = model_type_;
  adapter_spec_.num_layers = layers;
  adapter_spec_.hidden_size = hidden;

  parameter_count_ =
      size_t(config_.vocab_size) * hidden * (lm_head_ ? 2 : 1) + parameters_of(*final_norm_);
  if (embed_tokens_per_layer_)
    parameter_count_ += size_t(config_.vocab_size_per_layer_input) * layers * width +
                        parameters_of(*per_layer_model_projection_) +
                        parameters_of(*per_layer_projection_norm_);
  for (const auto& layer : layers_) {
    for (const auto* projection : {&layer.q_proj, &layer.o_proj, &layer.mlp.up_proj,
                                   &layer.mlp.down_proj, &*layer.mlp.gate_proj})
      parameter_count_ += parameters_of(*projection);
    for (const auto* projection :
         {&layer.k_proj, &layer.v_proj, &layer.per_layer_input_gate, &layer.per_layer_projection})
      parameter_count_ += *projection ? parameters_of(**projection) : 0;
    for (const auto* norm : {&layer.q_norm, &layer.input_norm, &layer.post_attention_norm,
                             &layer.pre_feedforward_norm, &layer.post_feedforward_norm})
      parameter_count_ += parameters_of(*norm);
    parameter_count_ += layer.k_norm ? parameters_of(*layer.k_norm) : 0;
    parameter_count_ +=
        layer.post_per_layer_input_norm ? parameters_of(*layer.post_per_layer_input_norm) : 0;
    parameter_count_ += 1;  // layer_scalar
    if (layer.experts) {
      const auto& experts = *config_.experts;
      parameter_count_ += parameters_of(layer.experts->router) + hidden + experts.num_experts +
                          3 * size_t(experts.num_experts) * hidden * experts.intermediate_size +
                          3 * size_t(hidden);
    }
  }
}

Gemma4Text::~Gemma4Text() = default;

mx::array Gemma4Text::per_layer_inputs(const mx::array& tokens, const mx::array& h) const {
  const int batch = tokens.shape(0), length = tokens.shape(1),
            layers = static_cast<int>(layers_.size()), width = config_.per_layer_input_size;
  const auto dtype = h.dtype();
  auto inputs = embed_tokens_per_layer_->lookup(tokens);
  inputs = mx::multiply(inputs, mx::array(std::sqrt(float(width)), inputs.dtype()));
  inputs = mx::reshape(inputs, {batch, length, layers, width});
  auto projection = per_layer_model_projection_->base(h);
  projection = mx::multiply(projection,
                            mx::array(float(std::pow(double(config_.hidden_size), -0.5)), dtype));
  projection =
      (*per_layer_projection_norm_)(mx::reshape(projection, {batch, length, layers, width}));
  return mx::multiply(mx::add(projection, inputs), mx::array(float(std::pow(2.0, -0.5)), dtype));
}

std::pair<AttentionMask, AttentionMask> Gemma4Text::masks_of(const CacheList& caches,
                                                             int length) const {
  // The shared layers keep no cache; the first layer of each kind owns its
  // keys, as mlx-lm's _make_masks relies on.
  return masks_by_layer_kind(
      caches, caches.size(), length, config_.sliding_window,
      [this](std::size_t i) -> std::optional<bool> { return layers_[i].shape.sliding; });
}

mx::array Gemma4Text::run_layers(const mx::array& tokens, const RowAdapters& adapters,
                                 const std::vector<AttentionMask>& full_masks,
                                 const std::vector<AttentionMask>& sliding_masks,
                                 const std::vector<CacheList*>& row_caches,
                                 const ForwardBatch* batch) const {
  const int rows = tokens.shape(0), length = tokens.shape(1);
  // One cache list for the whole batch (forward), or one per row.
  const int groups = static_cast<int>(row_caches.size());
  auto h = embed_tokens_.lookup(tokens);
  h = mx::multiply(h, mx::array(std::sqrt(float(config_.hidden_size)), h.dtype()));
  std::optional<mx::array> per_layer;
  if (embed_tokens_per_layer_) per_layer = per_layer_inputs(tokens, h);
  std::vector<SharedKeys> shared(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& layer = layers_[i];
    const auto& shape = layer.shape;
    const int head_dim = shape.head_dim;
    // Attention.
    auto residual = h;
    auto normed = layer.input_norm(h);
    auto queries = layer.q_norm(
        mx::reshape(layer.q_proj(normed, adapters), {rows, length, config_.num_heads, head_dim}));
    queries = mx::transpose(queries, {0, 2, 1, 3});
    std::optional<mx::array> keys, values;
    if (shape.owns_kv) {
      auto projected =
          mx::reshape((*layer.k_proj)(normed, adapters), {rows, length, shape.kv_heads, head_dim});
      auto raw_values = shape.keys_are_values
                            ? projected
                            : mx::reshape((*layer.v_proj)(normed, adapters),
                                          {rows, length, shape.kv_heads, head_dim});
      keys = mx::transpose((*layer.k_norm)(projected), {0, 2, 1, 3});
      values = mx::transpose(mx::fast::rms_norm(raw_values, std::nullopt, config_.norm_eps),
                             {0, 2, 1, 3});
    }
    const auto& masks = shape.sliding ? sliding_masks : full_masks;
    // Row group g of a batch [rows, ...]: all of it, or row g.
    auto group_of = [groups](const mx::array& t, int g) { return groups == 1 ? t : row_of(t, g); };
    std::vector<mx::array> attended;
    for (int g = 0; g < groups; ++g) {
      auto group_queries = group_of(queries, g);
      int offset = 0;
      std::optional<std::pair<mx::array, mx::array>> attended_keys;
      if (shape.owns_kv) {
        auto& cache = *(*row_caches[g])[i];
        offset = cache.offset();
        auto new_keys = layer.rope.apply(group_of(*keys, g), offset);
        auto new_values = group_of(*values, g);
        if (auto* quantized = cache.as_quantized()) {
          // No layer shares these keys (quantized_kv_refusal): attention
          // reads them packed, as mlx-lm's does.
          auto [packed_keys, packed_values] =
              quantized->update_and_fetch_packed(new_keys, new_values);
          attended.push_back(attend_packed(layer.rope.apply(group_queries, offset), packed_keys,
                                           packed_values, 1.0f, masks[g],
                                           *quantized->quantization(), /*fast_kernels=*/false));
          continue;
        }
        const auto ring = batch && shape.sliding ? batch->rows[g].ring_newest_first : std::nullopt;
        attended_keys = ring ? cache.update_and_fetch_in_ring_order(new_keys, new_values, *ring)
                             : cache.update_and_fetch(new_keys, new_values);
        shared[i].keys.push_back(attended_keys->first);
        shared[i].values.push_back(attended_keys->second);
        shared[i].offsets.push_back(offset);
      } else {
        const auto& source = shared[shape.kv_source];
        attended_keys.emplace(source.keys[g], source.values[g]);
        offset = source.offsets[g];
      }
      const auto [mode, mask_array] = fused_attention_mask(masks[g]);
      attended.push_back(mx::fast::scaled_dot_product_attention(
          layer.rope.apply(group_queries, offset), attended_keys->first, attended_keys->second,
          /*scale=*/1.0f, mode, mask_array));
    }
    auto attention = groups == 1 ? attended.front() : mx::concatenate(attended, 0);
    attention = mx::reshape(mx::transpose(attention, {0, 2, 1, 3}), {rows, length, -1});
    h = mx::add(residual, layer.post_attention_norm(layer.o_proj(attention, adapters)));
    // Feed-forward.
    residual = h;
    auto fed = layer.mlp(layer.pre_feedforward_norm(h), adapters);
    if (const auto& experts = layer.experts) {
      // The router reads h itself; rows that differ on the experts'
      // adapters run apart.
      auto routed =
          adapters.by_row_groups(experts->adapter_sites(), h,
                                 [&experts](const mx::array& rows, const RowAdapters& uniform) {
                                   return (*experts)(rows, uniform);
                                 });
      fed = mx::add(experts->dense_post_norm(fed), routed);
    }
    h = mx::add(residual, layer.post_feedforward_norm(fed));
    // The layer's own input, gated by the hidden state.
    if (per_layer) {
      auto start = mx::Shape{0, 0, static_cast<int>(i), 0};
      auto stop = per_layer->shape();
      stop[2] = static_cast<int>(i) + 1;
      auto input = mx::squeeze(mx::slice(*per_layer, start, stop), 2);
      auto gate = gelu_approx((*layer.per_layer_input_gate)(h, adapters));
      gate = (*layer.per_layer_projection)(mx::multiply(gate, input), adapters);
      h = mx::add(h, (*layer.post_per_layer_input_norm)(gate));
    }
    h = mx::multiply(h, *layer.layer_scalar);
  }
  return h;
}

mx::array Gemma4Text::head(const mx::array& h, const RowAdapters& adapters) const {
  auto normed = (*final_norm_)(h);
  auto logits = lm_head_ ? (*lm_head_)(normed, adapters) : embed_tokens_.as_linear(normed);
  if (config_.final_softcap) logits = softcap(logits, *config_.final_softcap);
  return logits;
}

mx::array Gemma4Text::forward(const mx::array& tokens, CacheList& caches,
                              const AdapterStack* stack) const {
  const auto adapters = RowAdapters::single(stack);
  auto [full, sliding] = masks_of(caches, tokens.shape(1));
  return head(run_layers(tokens, adapters, {full}, {sliding}, {&caches}, nullptr), adapters);
}

mx::array Gemma4Text::forward_batch(const mx::array& tokens, const ForwardBatch& batch) const {
  if (tokens.ndim() != 2 || tokens.shape(0) != static_cast<int>(batch.rows.size()) ||
      tokens.shape(1) != 1)
    throw std::invalid_argument("[forward_batch] tokens must be [rows, 1]");
  RowAdapters adapters;
  std::vector<AttentionMask> full_masks, sliding_masks;
  std::vector<CacheList*> row_caches;
  for (const auto& row : batch.rows) {
    adapters.rows.push_back(row.adapters);
    auto [full, sliding] = masks_of(*row.caches, 1);
    full_masks.push_back(std::move(full));
    sliding_masks.push_back(std::move(sliding));
    row_caches.push_back(row.caches);
  }
  return head(run_layers(tokens, adapters, full_masks, sliding_masks, row_caches, &batch),
              adapters);
}

CacheList Gemma4Text::make_caches() const {
  CacheList caches;
  for (const auto& layer : layers_) {
    if (!layer.shape.owns_kv) break;
    if (layer.shape.sliding)
      caches.push_back(std::make_unique<RotatingKvCache>(config_.sliding_window));
    else
      caches.push_back(std::make_unique<StandardKvCache>());
  }
  return caches;
}

mx::array Gemma4Text::hidden_states(const mx::array& tokens,
                                    const std::vector<int>& lengths) const {
  if (tokens.ndim() != 2) throw std::invalid_argument("[hidden_states] tokens must be [B, L]");
  if (!lengths.empty())
    for (int length : lengths)
      if (length != tokens.shape(1))
        throw Error("gemma4_text's hidden states take rows of one length");
  // Fresh full-length caches: every key of the sequence, the sliding
  // layers' window applied by their mask.
  CacheList caches;
  for (const auto& layer : layers_)
    if (layer.shape.owns_kv) caches.push_back(std::make_unique<StandardKvCache>());
  const int length = tokens.shape(1);
  const AttentionMask full{AttentionMask::Kind::causal, std::nullopt};
  const AttentionMask sliding{AttentionMask::Kind::array,
                              causal_mask(length, 0, config_.sliding_window)};
  const auto adapters = RowAdapters::single(nullptr);
  return (*final_norm_)(run_layers(tokens, adapters, {full}, {sliding}, {&caches}, nullptr));
}

std::shared_ptr<const BoundAdapter> Gemma4Text::bind_adapter(const AdapterFiles& files,
                                                             const std::string& name) const {
  return mlx_cpp::bind_adapter(files, name, adapter_sites_, adapter_spec_);
}

std::optional<std::string> Gemma4Text::adapter_training_refusal() const {
  return std::string("adapters on gemma4_text are not trained here yet");
}

std::optional<std::string> Gemma4Text::quantized_kv_refusal(
    const KvQuantization& quantization) const {
  // mlx-lm's layers that share keys read them as float arrays.
  if (config_.first_shared_layer < static_cast<int>(layers_.size()))
    return std::string(
        "gemma4_text's shared layers read their source layer's keys as floats: quantized KV "
        "caches are not available for it");
  // Sliding layers keep float rotating caches (as mlx-lm's do not quantize).
  for (const auto& layer : layers_)
    if (!layer.shape.sliding && layer.shape.head_dim % quantization.group_size != 0)
      return "the KV group size " + std::to_string(quantization.group_size) +
             " does not divide the head dimension " + std::to_string(layer.shape.head_dim);
  return std::nullopt;
}

size_t Gemma4Text::weight_bytes() const {
  size_t total = embed_tokens_.bytes() + (lm_head_ ? lm_head_->bytes() : 0) + final_norm_->bytes();
  if (embed_tokens_per_layer_)
    total += embed_tokens_per_layer_->bytes() + per_layer_model_projection_->bytes() +
             per_layer_projection_norm_->bytes();
  for (const auto& layer : layers_) total += layer.bytes();
  return total;
}

size_t Gemma4Text::weight_bytes_per_token() const {
  // One row of each embedding table is read; the head reads its whole table.
  size_t total = (lm_head_ ? lm_head_->bytes() : embed_tokens_.bytes()) + final_norm_->bytes();
  if (embed_tokens_per_layer_)
    total += per_layer_model_projection_->bytes() + per_layer_projection_norm_->bytes();
  for (const auto& layer : layers_) total += layer.bytes_per_token();
  return total;
}

}  // namespace mlx_cpp
