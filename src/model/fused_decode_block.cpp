#include "model/fused_decode_block.h"

#include <mlx/allocator.h>
#include <mlx/backend/cpu/encoder.h>
#include <mlx/ops.h>
#include <mlx/primitives.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#include "kernels/eager.h"
#include "model/dense_transformer.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace eager = kernels::eager;

namespace {

struct Projection {
  QuantizedTensor tensor;
  std::optional<mx::array> bias;
  int adapter_site = -1;

  // The op graph's dtype for this projection of x: the kernel's promotion,
  // then the bias add's.
  mx::Dtype output_type(mx::Dtype x) const {
    auto raw = mx::promote_types(x, tensor.scales.dtype());
    return bias ? mx::promote_types(raw, bias->dtype()) : raw;
  }
};

struct RmsWeights {
  mx::array weight;
  float eps;
};

}  // namespace

struct FusedDecodeBlock::Plan {
  RmsWeights input_norm, post_attention_norm;
  std::optional<RmsWeights> q_norm, k_norm;
  Projection q, k, v, o, gate, up, down;
  int rope_dims = 0;
  bool rope_traditional = false;
  std::optional<float> rope_base;
  float rope_scale = 1.0f;
  std::optional<mx::array> rope_freqs;  // float32
  std::optional<float> rope_input_scale;
  int num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float attention_scale = 1.0f;
  kernels::GatedActivation activation = kernels::GatedActivation::silu;
};

namespace {

using Plan = FusedDecodeBlock::Plan;

// The dtypes the op graph gives each value of the step (TransformerBlock
// with fast kernels, one row): every op promotes its inputs' dtypes.
struct StepTypes {
  mx::Dtype normed, q, k, v, q_normed, k_normed, key_cache, value_cache, attended, o, sum,
      post_normed, gate, up, activated, down, out;

  StepTypes(const Plan& p, mx::Dtype x)
      : normed(mx::promote_types(x, p.input_norm.weight.dtype())),
        q(p.q.output_type(normed)),
        k(p.k.output_type(normed)),
        v(p.v.output_type(normed)),
        q_normed(p.q_norm ? mx::promote_types(q, p.q_norm->weight.dtype()) : q),
        k_normed(p.k_norm ? mx::promote_types(k, p.k_norm->weight.dtype()) : k),
        // Float32 keys and values are cached as float16 (Attention).
        key_cache(k_normed == mx::float32 ? mx::float16 : k_normed),
        value_cache(k_normed == mx::float32 ? mx::float16 : v),
        attended(mx::promote_types(q_normed, mx::promote_types(key_cache, value_cache))),
        o(p.o.output_type(attended)),
        sum(mx::promote_types(x, o)),
        post_normed(mx::promote_types(sum, p.post_attention_norm.weight.dtype())),
        gate(p.gate.output_type(post_normed)),
        up(p.up.output_type(post_normed)),
        activated(mx::promote_types(gate, up)),
        down(p.down.output_type(activated)),
        out(mx::promote_types(sum, down)) {}
};

// outputs[i] = x @ projections[i] (+ bias), each in the shape given; one
// kernel call per run of projections that share a format.
void project(const mx::array& x, const std::vector<const Projection*>& projections,
             const std::vector<mx::Shape>& shapes, std::vector<mx::array>& outputs) {
  std::vector<mx::array> raw;
  for (std::size_t i = 0; i < projections.size(); ++i)
    raw.push_back(eager::allocated_array(
        shapes[i], mx::promote_types(x.dtype(), projections[i]->tensor.scales.dtype())));
  for (std::size_t first = 0; first < projections.size();) {
    const QuantizedTensor& format = projections[first]->tensor;
    std::size_t last = first + 1;
    while (last < projections.size() && projections[last]->tensor.shares_kernel_call(format))
      ++last;
    std::vector<kernels::QuantizedWeights> weights;
    std::vector<mx::array> run_outputs(raw.begin() + first, raw.begin() + last);
    for (std::size_t i = first; i < last; ++i)
      weights.push_back(projections[i]->tensor.kernel_weights());
    eager::quantized_matmuls(x, weights, format.params.group_size, format.params.bits,
                             kActivationPrecision, kPrefillArithmetic, run_outputs);
    first = last;
  }
  for (std::size_t i = 0; i < projections.size(); ++i) {
    const auto& bias = projections[i]->bias;
    if (!bias) {
      outputs.push_back(raw[i]);
      continue;
    }
    outputs.push_back(
        eager::allocated_array(shapes[i], mx::promote_types(raw[i].dtype(), bias->dtype())));
    eager::add(raw[i], *bias, outputs.back());
  }
}

// A per-head norm when the block has one, else the projection as it is.
mx::array head_norm(const std::optional<RmsWeights>& norm, const mx::array& heads, mx::Dtype type) {
  if (!norm) return heads;
  auto normed = eager::allocated_array(heads.shape(), type);
  eager::rms_norm(heads, norm->weight, norm->eps, normed);
  return normed;
}

// RotaryEmbedding::apply: the rotated part scaled first where the
// embedding has an input scale (yarn, longrope); nothing for a layer
// without positions (0 dims).
mx::array rotated(const Plan& p, const mx::array& heads, int position) {
  if (p.rope_dims == 0) return heads;
  auto input = heads;
  if (p.rope_input_scale) {
    input = eager::allocated_array(heads.shape(), heads.dtype());
    eager::scale_leading(heads, p.rope_dims, *p.rope_input_scale, input);
  }
  auto out = eager::allocated_array(heads.shape(), heads.dtype());
  eager::rope(input, p.rope_dims, p.rope_traditional, p.rope_base, p.rope_scale, position,
              p.rope_freqs, out);
  return out;
}

// The step's adapter updates: factor pairs, and per projection (q, k, v,
// o, gate, up, down) the terms of the rows that have some.
using ProjectionTerms = std::array<std::vector<kernels::LowRankTerm>, 7>;
struct StepAdapters {
  std::vector<mx::array> factors;
  ProjectionTerms terms;
};
enum ProjectionIndex { kQ, kK, kV, kO, kGate, kUp, kDown };

// A projection's output with its rows' adapter updates added in place, as
// the op graph's fast path adds them.
void add_adapters(const StepAdapters& adapters, ProjectionIndex projection, const mx::array& x,
                  mx::array& y) {
  const auto& terms = adapters.terms[projection];
  if (!terms.empty()) eager::low_rank_update(x, y, adapters.factors, terms, y);
}

// One sequence's row of a step: its cache storage and where its token goes.
struct RowSlot {
  mx::array keys, values;
  int position;
};

// The block on one token of each of B sequences: x [B, 1, hidden] → out.
// Norms, projections and the MLP take all rows at once (the decode
// kernels compute each row as they would alone); rope, the cache write
// and attention run row by row on each row's own storage, the token
// written at its position.
void run_step(const Plan& p, const StepTypes& types, const mx::array& x, std::vector<RowSlot>& rows,
              const StepAdapters& adapters, mx::array& out) {
  const int batch = x.shape(0), hidden = x.shape(-1), D = p.head_dim;
  auto normed = eager::allocated_array(x.shape(), types.normed);
  eager::rms_norm(x, p.input_norm.weight, p.input_norm.eps, normed);

  // [B, heads, 1, D] is [B, 1, heads * D] in memory: the projections write
  // the heads' layout directly.
  std::vector<mx::array> qkv;
  project(
      normed, {&p.q, &p.k, &p.v},
      {{batch, p.num_heads, 1, D}, {batch, p.num_kv_heads, 1, D}, {batch, p.num_kv_heads, 1, D}},
      qkv);
  for (auto index : {kQ, kK, kV}) add_adapters(adapters, index, normed, qkv[index]);
  auto queries = head_norm(p.q_norm, qkv[0], types.q_normed);
  auto keys = head_norm(p.k_norm, qkv[1], types.k_normed);
  auto attended = eager::allocated_array({batch, 1, p.num_heads * D}, types.attended);
  // One row of a batch array (the array itself for a batch of one).
  auto row_of = [batch](const mx::array& all, int b) {
    if (batch == 1) return all;
    auto shape = all.shape();
    shape[0] = 1;
    auto row = eager::allocated_array(shape, all.dtype());
    eager::copy_batch_row(all, b, row);
    return row;
  };
  for (int b = 0; b < batch; ++b) {
    auto& slot = rows[b];
    auto row_queries = rotated(p, row_of(queries, b), slot.position);
    auto row_keys = rotated(p, row_of(keys, b), slot.position);
    eager::write_sequence_row(row_keys, slot.keys, slot.position);
    eager::write_sequence_row(row_of(qkv[2], b), slot.values, slot.position);
    auto row_attended =
        batch == 1 ? attended : eager::allocated_array({1, 1, p.num_heads * D}, types.attended);
    eager::attention(row_queries, slot.keys, slot.values, p.attention_scale, slot.position + 1,
                     row_attended);
    if (batch > 1) eager::store_batch_row(row_attended, attended, b);
  }
  std::vector<mx::array> o;
  project(attended, {&p.o}, {{batch, 1, hidden}}, o);
  add_adapters(adapters, kO, attended, o[0]);

  auto sum = eager::allocated_array(x.shape(), types.sum);
  auto post_normed = eager::allocated_array(x.shape(), types.post_normed);
  eager::add_rms_norm(x, o[0], p.post_attention_norm.weight, p.post_attention_norm.eps, sum,
                      post_normed);
  const int ffn = p.gate.tensor.packed.shape(0);
  std::vector<mx::array> gate_up;
  project(post_normed, {&p.gate, &p.up}, {{batch, 1, ffn}, {batch, 1, ffn}}, gate_up);
  add_adapters(adapters, kGate, post_normed, gate_up[0]);
  add_adapters(adapters, kUp, post_normed, gate_up[1]);
  auto activated = eager::allocated_array({batch, 1, ffn}, types.activated);
  eager::gated_activation(gate_up[0], gate_up[1], p.activation, activated);
  std::vector<mx::array> down;
  project(activated, {&p.down}, {{batch, 1, hidden}}, down);
  add_adapters(adapters, kDown, activated, down[0]);
  eager::add(sum, down[0], out);
}

// inputs {x, then key and value storage of each row, then the adapters'
// factors} → {block output, then each row's key and value storage}. The
// storage is written in place (the outputs share the inputs' buffers)
// unless the row's slot asked for a copy or the storage is strided; then
// the outputs are fresh copies.
class FusedDecodeStep : public mx::Primitive {
 public:
  FusedDecodeStep(mx::Stream stream, std::shared_ptr<const Plan> plan, const StepTypes& types,
                  std::vector<int> positions, std::vector<bool> copies,
                  ProjectionTerms adapter_terms)
      : Primitive(stream),
        plan_(std::move(plan)),
        types_(types),
        positions_(std::move(positions)),
        copies_(std::move(copies)),
        adapter_terms_(std::move(adapter_terms)) {}

  void eval_cpu(const std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) override {
    auto& encoder = mx::cpu::get_command_encoder(stream());
    outputs[0].set_data(mx::allocator::malloc(outputs[0].nbytes()));
    const std::size_t storage_end = 1 + 2 * positions_.size();
    std::vector<bool> copies(storage_end, false);
    for (std::size_t i = 1; i < storage_end; ++i) {
      const auto& storage = inputs[i];
      copies[i] = copies_[(i - 1) / 2] || !storage.flags().row_contiguous;
      if (copies[i])
        outputs[i].set_data(mx::allocator::malloc(outputs[i].nbytes()));
      else
        outputs[i].copy_shared_buffer(storage);
    }
    for (const auto& in : inputs) encoder.set_input_array(in);
    for (auto& out : outputs) encoder.set_output_array(out);
    auto weak = [](const mx::array& a) { return mx::array::unsafe_weak_copy(a); };
    std::vector<mx::array> weak_inputs, weak_outputs;
    for (const auto& in : inputs) weak_inputs.push_back(weak(in));
    for (const auto& out : outputs) weak_outputs.push_back(weak(out));
    // The factors as the task reads them: the inputs' weak copies.
    StepAdapters adapters{{weak_inputs.begin() + storage_end, weak_inputs.end()}, adapter_terms_};
    encoder.dispatch([plan = plan_, types = types_, positions = positions_, copies,
                      adapters = std::move(adapters), inputs = std::move(weak_inputs),
                      outputs = std::move(weak_outputs)]() mutable {
      auto x = inputs[0];
      if (!x.flags().row_contiguous) {
        auto contiguous = eager::allocated_array(x.shape(), x.dtype());
        eager::copy(x, contiguous);
        x = contiguous;
      }
      std::vector<RowSlot> rows;
      for (std::size_t b = 0; b < positions.size(); ++b) {
        for (std::size_t i = 1 + 2 * b; i < 3 + 2 * b; ++i)
          if (copies[i]) eager::copy(inputs[i], outputs[i]);
        rows.push_back({outputs[1 + 2 * b], outputs[2 + 2 * b], positions[b]});
      }
      run_step(*plan, types, x, rows, adapters, outputs[0]);
    });
  }
  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error("[FusedDecodeBlock] runs on the CPU only");
  }
  const char* name() const override { return "FusedDecodeBlock"; }

 private:
  std::shared_ptr<const Plan> plan_;
  StepTypes types_;
  std::vector<int> positions_;
  std::vector<bool> copies_;
  ProjectionTerms adapter_terms_;  // over the factors, the last inputs
};

std::optional<Projection> fast_projection(const Linear& linear) {
  if (!linear.runs_fast_kernel()) return std::nullopt;
  return Projection{*linear.quantized_tensor(), linear.bias(), linear.adapter_site()};
}

RmsWeights norm_of(const Norm& norm) {
  return {norm.weight(), norm.eps()};
}

// Whether the block is the llama-family block the step computes: RMS
// norms before each branch, a gated MLP of an activation it has a kernel
// for, plain attention (no softcap, casts, query scales or output gate) and a rope of a
// fixed base.
bool fused_step_covers(const TransformerBlock& block) {
  const auto& attention = block.attention;
  const auto& mlp = block.mlp;
  auto rms = [](const std::optional<Norm>& norm) { return !norm || norm->kind() == NormKind::rms; };
  return block.attends() && !block.moe && block.input_norm && !block.pre_feedforward_norm &&
         !block.residual_scale && block.layout == BlockLayout::sequential &&
         block.input_norm->kind() == NormKind::rms && block.post_attention_norm &&
         block.post_attention_norm->kind() == NormKind::rms && rms(attention.q_norm) &&
         rms(attention.k_norm) && !attention.qk_norm_full_width && !attention.qk_norm_after_rope &&
         attention.upcast == AttentionUpcast::none && !attention.softcap &&
         !attention.query_position_scale && !attention.output_gate &&
         attention.kernels == KernelMode::fast && attention.rope.fast_kernel &&
         !attention.rope.dynamic && mlp.gate_proj &&
         (mlp.activation == MlpActivation::silu || mlp.activation == MlpActivation::gelu_approx);
}

// Every array the plan holds, evaluated now: the step reads their buffers.
void evaluate(const Plan& p) {
  std::vector<mx::array> arrays{p.input_norm.weight, p.post_attention_norm.weight};
  for (const auto* projection : {&p.q, &p.k, &p.v, &p.o, &p.gate, &p.up, &p.down}) {
    const auto& q = projection->tensor;
    arrays.insert(arrays.end(), {q.packed, q.scales, q.biases});
    if (projection->bias) arrays.push_back(*projection->bias);
  }
  for (const auto* norm : {&p.q_norm, &p.k_norm})
    if (*norm) arrays.push_back((*norm)->weight);
  if (p.rope_freqs) arrays.push_back(*p.rope_freqs);
  mx::eval(arrays);
}

}  // namespace

std::optional<FusedDecodeBlock> FusedDecodeBlock::make(const TransformerBlock& block) {
  const auto& attention = block.attention;
  const auto& mlp = block.mlp;
  // Other blocks (post-norm and sandwich blocks, scaled residual branches,
  // parallel branches, ...) run their op graphs instead.
  if (!fused_step_covers(block)) return std::nullopt;
  std::vector<std::optional<Projection>> projections;
  for (const auto* linear : {&attention.q_proj, &attention.k_proj, &attention.v_proj,
                             &attention.o_proj, &*mlp.gate_proj, &mlp.up_proj, &mlp.down_proj}) {
    projections.push_back(fast_projection(*linear));
    if (!projections.back()) return std::nullopt;
  }
  const auto& rope = attention.rope;
  auto optional_norm = [](const std::optional<Norm>& norm) {
    return norm ? std::optional(norm_of(*norm)) : std::nullopt;
  };
  auto plan = std::make_shared<Plan>(Plan{
      .input_norm = norm_of(*block.input_norm),
      .post_attention_norm = norm_of(*block.post_attention_norm),
      .q_norm = optional_norm(attention.q_norm),
      .k_norm = optional_norm(attention.k_norm),
      .q = *projections[0],
      .k = *projections[1],
      .v = *projections[2],
      .o = *projections[3],
      .gate = *projections[4],
      .up = *projections[5],
      .down = *projections[6],
      .rope_dims = rope.dims,
      .rope_traditional = rope.traditional,
      .rope_base = rope.base,
      .rope_scale = rope.scale,
      .rope_freqs = rope.freqs ? std::optional(mx::astype(*rope.freqs, mx::float32)) : std::nullopt,
      .rope_input_scale = rope.input_scale,
      .num_heads = attention.num_heads,
      .num_kv_heads = attention.num_kv_heads,
      .head_dim = projections[0]->tensor.packed.shape(0) / attention.num_heads,
      .attention_scale = attention.scale,
      .activation = mlp.activation == MlpActivation::gelu_approx
                        ? kernels::GatedActivation::gelu_approx
                        : kernels::GatedActivation::silu,
  });
  evaluate(*plan);
  FusedDecodeBlock fused;
  fused.plan_ = std::move(plan);
  return fused;
}

std::optional<mx::array> FusedDecodeBlock::operator()(const mx::array& x, KvCache& cache,
                                                      const RowAdapters& adapters) const {
  return (*this)(x, std::vector<KvCache*>{&cache}, adapters);
}

std::optional<mx::array> FusedDecodeBlock::operator()(const mx::array& x,
                                                      const std::vector<KvCache*>& caches,
                                                      const RowAdapters& adapters) const {
  const int batch = static_cast<int>(caches.size());
  if (x.ndim() != 3 || x.shape(0) != batch || x.shape(1) != 1) return std::nullopt;
  StepAdapters step_adapters;
  if (adapters.any()) {
    const Projection* projections[] = {&plan_->q,    &plan_->k,  &plan_->v,   &plan_->o,
                                       &plan_->gate, &plan_->up, &plan_->down};
    for (int index = kQ; index <= kDown; ++index) {
      auto kernel = adapters.kernel_terms(projections[index]->adapter_site, 1);
      if (std::any_of(kernel.dora_rows.begin(), kernel.dora_rows.end(),
                      [](bool row) { return row; }))
        return std::nullopt;
      const int offset = static_cast<int>(step_adapters.factors.size() / 2);
      for (auto& term : kernel.terms) term.factors += offset;
      step_adapters.factors.insert(step_adapters.factors.end(), kernel.factors.begin(),
                                   kernel.factors.end());
      step_adapters.terms[index] = std::move(kernel.terms);
    }
  }
  const auto stream = mx::to_stream(mx::StreamOrDevice{});
  if (stream.device != mx::Device::cpu) return std::nullopt;
  const StepTypes types(*plan_, x.dtype());
  // Every row must offer a slot of the storage the op graph would write;
  // otherwise no cache is touched.
  std::vector<DecodeSlot> slots;
  for (auto* cache : caches) {
    auto slot = cache->decode_slot();
    if (!slot) return std::nullopt;
    const auto& keys = slot->keys;
    if (keys.dtype() != types.key_cache || slot->values.dtype() != types.value_cache ||
        keys.shape(0) != 1 || keys.shape(1) != plan_->num_kv_heads ||
        keys.shape(3) != plan_->head_dim)
      return std::nullopt;
    slots.push_back(std::move(*slot));
  }
  std::vector<mx::Shape> shapes{x.shape()};
  std::vector<mx::Dtype> dtypes{types.out};
  std::vector<mx::array> inputs{x};
  std::vector<int> positions;
  std::vector<bool> copies;
  for (const auto& slot : slots) {
    for (const auto* storage : {&slot.keys, &slot.values}) {
      shapes.push_back(storage->shape());
      dtypes.push_back(storage->dtype());
      inputs.push_back(*storage);
    }
    positions.push_back(slot.position);
    copies.push_back(slot.copy);
  }
  inputs.insert(inputs.end(), step_adapters.factors.begin(), step_adapters.factors.end());
  auto outputs = mx::array::make_arrays(
      std::move(shapes), std::move(dtypes),
      std::make_shared<FusedDecodeStep>(stream, plan_, types, std::move(positions),
                                        std::move(copies), std::move(step_adapters.terms)),
      std::move(inputs));
  for (int b = 0; b < batch; ++b) caches[b]->commit_decode(outputs[1 + 2 * b], outputs[2 + 2 * b]);
  return outputs[0];
}

}  // namespace mlx_cpp
