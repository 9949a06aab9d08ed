// Attention over packed keys and values (packed_attention_fast): the
// attention kernel of attention.cpp over rows unpacked as they are read.
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <sstream>

#include "kernels/attention_rows.h"
#include "kernels/eager.h"
#include "kernels/kernels.h"
#include "kernels/packed_rows.h"
#include "kernels/primitive_base.h"
#include "kernels/turbo_codec.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kAttentionOp = "packed_attention_fast";

// The packed inputs' rows are read with their strides, but each row's
// elements must be adjacent; a view that is not (rare) is copied.
mx::array with_adjacent_rows(const mx::array& a) {
  if (a.strides()[3] == 1) return a;
  auto copy = eager::allocated_array(a.shape(), a.dtype());
  eager::copy(a, copy);
  return copy;
}

// Inputs: q, then keys' and values' arrays (codes, scales[, biases] each),
// then the mask if any.
class PackedAttention : public FallbackPrimitive {
 public:
  PackedAttention(mx::Stream stream, Fallback fallback, KvPackingFormat format, float scale,
                  bool causal, bool has_mask)
      : FallbackPrimitive(stream, std::move(fallback)),
        format_(format),
        scale_(scale),
        causal_(causal),
        has_mask_(has_mask) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(
        inputs, outputs,
        [format = format_, scale = scale_, causal = causal_, has_mask = has_mask_](const Arrays& in,
                                                                                   Arrays& out) {
          const int per_tensor = format.packing == KvPacking::affine ? 3 : 2;
          Arrays packed;
          for (int i = 1; i <= 2 * per_tensor; ++i) packed.push_back(with_adjacent_rows(in[i]));
          const mx::array* mask = has_mask ? &in.back() : nullptr;
          const int key_count = packed[0].shape(2);
          if (format.packing == KvPacking::affine) {
            AffinePackedRows keys(packed[0], packed[1], packed[2], format.bits, format.group_size);
            AffinePackedRows values(packed[3], packed[4], packed[5], format.bits,
                                    format.group_size);
            run_attention(in[0], keys, values, mask, scale, causal, key_count, out[0]);
          } else {
            TurboPackedRows keys(packed[0], packed[1], format.bits, format.group_size);
            TurboPackedRows values(packed[2], packed[3], format.bits, format.group_size);
            run_attention(in[0], keys, values, mask, scale, causal, key_count, out[0]);
          }
        },
        0);
  }
  const char* name() const override { return "PackedAttention"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    const auto& q = inputs[0];
    return {{q.shape(0), q.shape(1), q.shape(2), q.shape(3)}};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const PackedAttention&>(other);
    return format_ == o.format_ && scale_ == o.scale_ && causal_ == o.causal_ &&
           has_mask_ == o.has_mask_;
  }

 private:
  KvPackingFormat format_;
  float scale_;
  bool causal_;
  bool has_mask_;
};

void check_packed(std::ostringstream& msg, const char* what, const mx::array& q,
                  const PackedKvRows& rows, const KvPackingFormat& format) {
  if (!msg.str().empty()) return;
  const int dim = q.shape(3), groups = dim / format.group_size;
  const mx::Shape codes{q.shape(0), rows.codes.ndim() == 4 ? rows.codes.shape(1) : 0,
                        rows.codes.ndim() == 4 ? rows.codes.shape(2) : 0, dim * format.bits / 32};
  if (rows.codes.ndim() != 4 || rows.codes.dtype() != mx::uint32 || rows.codes.shape() != codes) {
    msg << what << ": codes must be uint32 " << codes << ", got " << rows.codes.shape() << " "
        << rows.codes.dtype();
    return;
  }
  mx::Shape factors = codes;
  factors[3] = groups;
  const bool affine = format.packing == KvPacking::affine;
  if (rows.scales.shape() != factors ||
      (affine ? !is_float_dtype(rows.scales.dtype()) : rows.scales.dtype() != mx::float32)) {
    msg << what << (affine ? ": scales must be float " : ": norms must be float32 ") << factors
        << ", got " << rows.scales.shape() << " " << rows.scales.dtype();
  } else if (affine != rows.biases.has_value()) {
    msg << what << (affine ? ": the affine packing needs biases" : ": TurboQuant has no biases");
  } else if (affine &&
             (rows.biases->shape() != factors || rows.biases->dtype() != rows.scales.dtype())) {
    msg << what << ": biases must match the scales " << factors << " " << rows.scales.dtype()
        << ", got " << rows.biases->shape() << " " << rows.biases->dtype();
  }
}

void validate(const mx::array& q, const PackedKvRows& k, const PackedKvRows& v,
              const KvPackingFormat& format, bool causal, const std::optional<mx::array>& mask) {
  std::ostringstream msg;
  const bool affine = format.packing == KvPacking::affine;
  if (q.ndim() != 4 || !is_float_dtype(q.dtype())) {
    msg << "q must be a 4-D float array, got " << q.shape() << " " << q.dtype();
  } else if (affine ? !(format.bits == 2 || format.bits == 4 || format.bits == 8) ||
                          !(format.group_size == 32 || format.group_size == 64 ||
                            format.group_size == 128)
                    : !turbo::supported(format.bits, format.group_size)) {
    msg << "no " << (affine ? "affine" : "TurboQuant") << " packing of " << format.bits
        << " bits in groups of " << format.group_size;
  } else if (q.shape(3) % format.group_size != 0) {
    msg << "groups of " << format.group_size << " do not divide the head dimension " << q.shape(3);
  }
  check_packed(msg, "keys", q, k, format);
  check_packed(msg, "values", q, v, format);
  if (msg.str().empty()) {
    const int kv_heads = k.codes.shape(1), keys = k.codes.shape(2);
    if (v.codes.shape(1) != kv_heads || v.codes.shape(2) != keys)
      msg << "keys " << k.codes.shape() << " and values " << v.codes.shape() << " disagree";
    else
      describe_attention_problem(msg, q, kv_heads, keys, causal, mask);
  }
  if (!msg.str().empty()) reject(kAttentionOp, msg.str());
}

}  // namespace

mx::array packed_attention_fast(const mx::array& q, const PackedKvRows& k, const PackedKvRows& v,
                                const KvPackingFormat& format, float scale, bool causal,
                                const std::optional<mx::array>& mask, mx::StreamOrDevice s) {
  validate(q, k, v, format, causal, mask);
  const bool affine = format.packing == KvPacking::affine;
  std::vector<mx::array> inputs{q, k.codes, k.scales};
  if (affine) inputs.push_back(*k.biases);
  inputs.push_back(v.codes);
  inputs.push_back(v.scales);
  if (affine) inputs.push_back(*v.biases);
  const mx::Shape full{q.shape(0), q.shape(1), q.shape(2), k.codes.shape(2)};
  if (mask) inputs.push_back(mx::broadcast_to(*mask, full, s));
  std::string mode = causal ? "causal" : (mask ? "array" : "");
  auto fallback = [format, scale, mode, affine](const std::vector<mx::array>& in) {
    // Dequantized keys and values into the stock attention.
    auto restore = [&](int first) {
      if (affine)
        return mx::dequantize(in[first], in[first + 1], in[first + 2], format.group_size,
                              format.bits);
      return turbo_dequantize(in[first], in[first + 1], format.bits, format.group_size);
    };
    const int per_tensor = affine ? 3 : 2;
    auto keys = mx::astype(restore(1), in[0].dtype());
    auto values = mx::astype(restore(1 + per_tensor), in[0].dtype());
    std::optional<mx::array> mask_array;
    if (mode == "array") mask_array = in.back();
    return std::vector<mx::array>{
        mx::fast::scaled_dot_product_attention(in[0], keys, values, scale, mode, mask_array)};
  };
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) return fallback(inputs)[0];
  return mx::array(
      q.shape(), q.dtype(),
      std::make_shared<PackedAttention>(stream, fallback, format, scale, causal, mask.has_value()),
      std::move(inputs));
}

}  // namespace mlx_cpp::kernels
