#include "model/quantized_attention.h"

#include <mlx/ops.h>
#include <mlx/utils.h>

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// The key heads shared by `repeats` query heads each: an axis of one in
// front of the sequence axis, as mlx-lm's expand_dims(x, -3).
PackedKv share_heads(const PackedKv& v) {
  return {mx::expand_dims(v.codes, -3), mx::expand_dims(v.scales, -3),
          mx::expand_dims(*v.biases, -3)};
}

}  // namespace

mx::array quantized_attention(mx::array queries, const PackedKv& keys, const PackedKv& values,
                              float scale, const AttentionMask& mask,
                              const KvQuantization& quantization) {
  const int batch = queries.shape(0), heads = queries.shape(1), length = queries.shape(2),
            head_dim = queries.shape(3), kv_heads = keys.codes.shape(-3);
  const int repeats = heads / kv_heads;
  queries = mx::multiply(queries, mx::array(scale, queries.dtype()));
  PackedKv shared_keys = keys, shared_values = values;
  if (repeats > 1) {
    queries = mx::reshape(queries, {batch, kv_heads, repeats, length, head_dim});
    shared_keys = share_heads(keys);
    shared_values = share_heads(values);
  }
  auto scores =
      mx::quantized_matmul(queries, shared_keys.codes, shared_keys.scales, *shared_keys.biases,
                           /*transpose=*/true, quantization.group_size, quantization.bits);
  std::optional<mx::array> mask_array = mask.mask;
  if (mask.kind == AttentionMask::Kind::causal) {
    const int key_length = scores.shape(-1);
    mask_array = causal_mask(length, key_length - length, std::nullopt);
  }
  if (mask.kind != AttentionMask::Kind::none && mask_array) {
    if (mask_array->dtype() == mx::bool_)
      scores =
          mx::where(*mask_array, scores, mx::array(mx::finfo(scores.dtype()).min, scores.dtype()));
    else
      scores = mx::add(scores, *mask_array);
  }
  scores = mx::softmax(scores, -1, /*precise=*/true);
  auto output =
      mx::quantized_matmul(scores, shared_values.codes, shared_values.scales, *shared_values.biases,
                           /*transpose=*/false, quantization.group_size, quantization.bits);
  if (repeats > 1) output = mx::reshape(output, {batch, heads, length, head_dim});
  return output;
}

mx::array attend_packed(const mx::array& queries, const PackedKv& keys, const PackedKv& values,
                        float scale, const AttentionMask& mask, const KvQuantization& quantization,
                        bool fast_kernels) {
  const bool turbo = quantization.packing == kernels::KvPacking::turbo;
  const bool own_kernel_reads_affine =
      fast_kernels && mx::default_device() == mx::Device::cpu &&
      (quantization.bits == 2 || quantization.bits == 4 || quantization.bits == 8);
  if (!turbo && !own_kernel_reads_affine)
    return quantized_attention(queries, keys, values, scale, mask, quantization);
  std::optional<mx::array> mask_array;
  if (mask.kind == AttentionMask::Kind::array) mask_array = mask.mask;
  return kernels::packed_attention_fast(queries, keys, values, quantization.format(), scale,
                                        mask.kind == AttentionMask::Kind::causal, mask_array);
}

}  // namespace mlx_cpp
