#include "model/fused_decode_block.h"

#include <mlx/allocator.h>
#include <mlx/backend/cpu/encoder.h>
#include <mlx/ops.h>
#include <mlx/primitives.h>
#include <mlx/transforms.h>

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

  // The op graph's dtype for this projection of x: the kernel's promotion,
  // then the bias add's.
  mx::Dtype output_type(mx::Dtype x) const {
    auto raw = mx::promote_types(x, tensor.scales.dtype());
    return bias ? mx::promote_types(raw, bias->dtype()) : raw;
  }
};

struct Norm {
  mx::array weight;
  float eps;
};

}  // namespace

struct FusedDecodeBlock::Plan {
  Norm input_norm, post_attention_norm;
  std::optional<Norm> q_norm, k_norm;
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
mx::array head_norm(const std::optional<Norm>& norm, const mx::array& heads, mx::Dtype type) {
  if (!norm) return heads;
  auto normed = eager::allocated_array(heads.shape(), type);
  eager::rms_norm(heads, norm->weight, norm->eps, normed);
  return normed;
}

// RotaryEmbedding::apply: the rotated part scaled first where the
// embedding has an input scale (yarn, longrope).
mx::array rotated(const Plan& p, const mx::array& heads, int position) {
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

// The block on one token: x [1, 1, hidden] → out; keys and values are the
// cache's storage, the token written at `position`.
void run_step(const Plan& p, const StepTypes& types, const mx::array& x, mx::array& keys,
              mx::array& values, int position, mx::array& out) {
  const int hidden = x.shape(-1), D = p.head_dim;
  auto normed = eager::allocated_array(x.shape(), types.normed);
  eager::rms_norm(x, p.input_norm.weight, p.input_norm.eps, normed);

  // [1, heads, 1, D] is [1, 1, heads * D] in memory: the projections write
  // the heads' layout directly.
  std::vector<mx::array> qkv;
  project(normed, {&p.q, &p.k, &p.v},
          {{1, p.num_heads, 1, D}, {1, p.num_kv_heads, 1, D}, {1, p.num_kv_heads, 1, D}}, qkv);
  auto queries = rotated(p, head_norm(p.q_norm, qkv[0], types.q_normed), position);
  auto new_keys = rotated(p, head_norm(p.k_norm, qkv[1], types.k_normed), position);
  eager::write_sequence_row(new_keys, keys, position);
  eager::write_sequence_row(qkv[2], values, position);

  auto attended = eager::allocated_array({1, 1, p.num_heads * D}, types.attended);
  eager::attention(queries, keys, values, p.attention_scale, position + 1, attended);
  std::vector<mx::array> o;
  project(attended, {&p.o}, {{1, 1, hidden}}, o);

  auto sum = eager::allocated_array(x.shape(), types.sum);
  auto post_normed = eager::allocated_array(x.shape(), types.post_normed);
  eager::add_rms_norm(x, o[0], p.post_attention_norm.weight, p.post_attention_norm.eps, sum,
                      post_normed);
  const int ffn = p.gate.tensor.packed.shape(0);
  std::vector<mx::array> gate_up;
  project(post_normed, {&p.gate, &p.up}, {{1, 1, ffn}, {1, 1, ffn}}, gate_up);
  auto activated = eager::allocated_array({1, 1, ffn}, types.activated);
  eager::gated_activation(gate_up[0], gate_up[1], p.activation, activated);
  std::vector<mx::array> down;
  project(activated, {&p.down}, {{1, 1, hidden}}, down);
  eager::add(sum, down[0], out);
}

// inputs {x, key storage, value storage} → {block output, key storage,
// value storage}. The storage is written in place (the outputs share the
// inputs' buffers) unless the slot asked for a copy or the storage is
// strided; then the outputs are fresh copies.
class FusedDecodeStep : public mx::Primitive {
 public:
  FusedDecodeStep(mx::Stream stream, std::shared_ptr<const Plan> plan, const StepTypes& types,
                  int position, bool copy)
      : Primitive(stream),
        plan_(std::move(plan)),
        types_(types),
        position_(position),
        copy_(copy) {}

  void eval_cpu(const std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) override {
    auto& encoder = mx::cpu::get_command_encoder(stream());
    outputs[0].set_data(mx::allocator::malloc(outputs[0].nbytes()));
    bool copies[2];
    for (int i = 0; i < 2; ++i) {
      const auto& storage = inputs[1 + i];
      copies[i] = copy_ || !storage.flags().row_contiguous;
      if (copies[i])
        outputs[1 + i].set_data(mx::allocator::malloc(outputs[1 + i].nbytes()));
      else
        outputs[1 + i].copy_shared_buffer(storage);
    }
    for (const auto& in : inputs) encoder.set_input_array(in);
    for (auto& out : outputs) encoder.set_output_array(out);
    auto weak = [](const mx::array& a) { return mx::array::unsafe_weak_copy(a); };
    encoder.dispatch([plan = plan_, types = types_, position = position_, copy_keys = copies[0],
                      copy_values = copies[1], x = weak(inputs[0]), keys_in = weak(inputs[1]),
                      values_in = weak(inputs[2]), out = weak(outputs[0]), keys = weak(outputs[1]),
                      values = weak(outputs[2])]() mutable {
      if (!x.flags().row_contiguous) {
        auto contiguous = eager::allocated_array(x.shape(), x.dtype());
        eager::copy(x, contiguous);
        x = contiguous;
      }
      if (copy_keys) eager::copy(keys_in, keys);
      if (copy_values) eager::copy(values_in, values);
      run_step(*plan, types, x, keys, values, position, out);
    });
  }
  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error("[FusedDecodeBlock] runs on the CPU only");
  }
  const char* name() const override { return "FusedDecodeBlock"; }

 private:
  std::shared_ptr<const Plan> plan_;
  StepTypes types_;
  int position_;
  bool copy_;
};

std::optional<Projection> fast_projection(const Linear& linear) {
  if (!linear.runs_fast_kernel()) return std::nullopt;
  return Projection{*linear.quantized_tensor(), linear.bias()};
}

Norm norm_of(const RmsNorm& norm) {
  return {norm.weight(), norm.eps()};
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
  if (block.pre_feedforward_norm || attention.kernels != KernelMode::fast ||
      !attention.rope.fast_kernel)
    return std::nullopt;
  std::vector<std::optional<Projection>> projections;
  for (const auto* linear : {&attention.q_proj, &attention.k_proj, &attention.v_proj,
                             &attention.o_proj, &mlp.gate_proj, &mlp.up_proj, &mlp.down_proj}) {
    projections.push_back(fast_projection(*linear));
    if (!projections.back()) return std::nullopt;
  }
  const auto& rope = attention.rope;
  auto optional_norm = [](const std::optional<RmsNorm>& norm) {
    return norm ? std::optional(norm_of(*norm)) : std::nullopt;
  };
  auto plan = std::make_shared<Plan>(Plan{
      .input_norm = norm_of(block.input_norm),
      .post_attention_norm = norm_of(block.post_attention_norm),
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
      .activation = mlp.activation == GatedActivation::gelu_approx
                        ? kernels::GatedActivation::gelu_approx
                        : kernels::GatedActivation::silu,
  });
  evaluate(*plan);
  FusedDecodeBlock fused;
  fused.plan_ = std::move(plan);
  return fused;
}

std::optional<mx::array> FusedDecodeBlock::operator()(const mx::array& x, KvCache& cache) const {
  if (x.ndim() != 3 || x.shape(0) != 1 || x.shape(1) != 1) return std::nullopt;
  const auto stream = mx::to_stream(mx::StreamOrDevice{});
  if (stream.device != mx::Device::cpu) return std::nullopt;
  auto slot = cache.decode_slot();
  if (!slot) return std::nullopt;
  const StepTypes types(*plan_, x.dtype());
  const auto& keys = slot->keys;
  if (keys.dtype() != types.key_cache || slot->values.dtype() != types.value_cache ||
      keys.shape(1) != plan_->num_kv_heads || keys.shape(3) != plan_->head_dim)
    return std::nullopt;
  auto outputs = mx::array::make_arrays(
      {x.shape(), keys.shape(), slot->values.shape()},
      {types.out, keys.dtype(), slot->values.dtype()},
      std::make_shared<FusedDecodeStep>(stream, plan_, types, slot->position, slot->copy),
      {x, keys, slot->values});
  cache.commit_decode(outputs[1], outputs[2]);
  return outputs[0];
}

}  // namespace mlx_cpp
