#include "io/gguf/tensor_conversion.h"

#include <mlx/ops.h>

#include "io/error.h"
#include "io/gguf/affine_mapping.h"
#include "io/gguf/dequantize.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"

namespace mlx_cpp::gguf {
namespace {

namespace mx = mlx::core;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Heads whose rows llama.cpp permuted, or 0 when the tensor was not permuted.
int permuted_heads(const TensorContext& context, const std::string& gguf_name) {
  if (!context.spec.rope_rows_permuted) return 0;
  if (ends_with(gguf_name, ".attn_q.weight") || ends_with(gguf_name, ".attn_q.bias")) {
    return context.attention_heads;
  }
  if (ends_with(gguf_name, ".attn_k.weight") || ends_with(gguf_name, ".attn_k.bias")) {
    return context.kv_heads;
  }
  return 0;
}

mx::array reorder_rows(const mx::array& values, const std::vector<int>& order) {
  if (order.empty()) return values;
  mx::array indices(order.begin(), {static_cast<int>(order.size())}, mx::int32);
  return mx::take(values, indices, 0);
}

mx::array dequantized(const TensorContext& context, const TensorInfo& tensor) {
  auto values = dequantize_tensor(context.file, tensor);
  auto shape = tensor.shape();
  return mx::array(values.begin(), mx::Shape(shape.begin(), shape.end()), mx::float32);
}

// Largest of the requested group size, 64 and 32 that divides the row.
std::optional<int> usable_group_size(int columns, int requested) {
  for (int group : {requested, 64, 32}) {
    if (group > 0 && columns % group == 0) return group;
  }
  return std::nullopt;
}

}  // namespace

int default_requantization_bits(std::uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kQ6_K:
      return 6;
    case GgmlType::kQ8_K:
      return 8;
    default:
      return 4;
  }
}

std::vector<int> unpermute_rope_rows(int rows, int heads) {
  if (heads <= 0 || rows % (2 * heads) != 0) {
    throw Error("[convert] cannot undo the rotary permutation of " + std::to_string(rows) +
                " rows over " + std::to_string(heads) + " heads");
  }
  int per_head = rows / heads;
  int half = per_head / 2;
  std::vector<int> order(rows);
  for (int head = 0; head < heads; ++head) {
    for (int s = 0; s < 2; ++s) {
      for (int i = 0; i < half; ++i) {
        order[head * per_head + s * half + i] = head * per_head + 2 * i + s;
      }
    }
  }
  return order;
}

ConvertedTensor convert_tensor(const TensorContext& context, const TensorInfo& tensor,
                               const std::string& hf_name, const QuantizationChoice& choice) {
  ConvertedTensor converted;
  std::vector<int> order;
  if (int heads = permuted_heads(context, tensor.name); heads > 0) {
    order = unpermute_rope_rows(static_cast<int>(tensor.dims.back()), heads);
  }
  bool matrix = tensor.dims.size() == 2 && ends_with(hf_name, ".weight");
  std::string module = hf_name.substr(0, hf_name.size() - std::string(".weight").size());
  if (matrix && !choice.dense_dtype) {
    if (auto affine = exact_affine(context.file, tensor)) {
      converted.arrays.emplace(hf_name, reorder_rows(affine->weight, order));
      converted.arrays.emplace(module + ".scales", reorder_rows(affine->scales, order));
      converted.arrays.emplace(module + ".biases", reorder_rows(affine->biases, order));
      converted.bits = affine->bits;
      converted.group_size = affine->group_size;
      converted.exact = true;
      return converted;
    }
    auto group = usable_group_size(static_cast<int>(tensor.dims[0]), choice.group_size);
    if (group) {
      int bits = choice.bits.value_or(default_requantization_bits(tensor.type));
      auto parts = mx::quantize(reorder_rows(dequantized(context, tensor), order), *group, bits);
      converted.arrays.emplace(hf_name, parts[0]);
      converted.arrays.emplace(module + ".scales", parts[1]);
      converted.arrays.emplace(module + ".biases", parts[2]);
      converted.bits = bits;
      converted.group_size = *group;
      return converted;
    }
  }
  auto values = reorder_rows(dequantized(context, tensor), order);
  if (context.spec.norms_shifted_by_one && ends_with(hf_name, "norm.weight")) {
    values = mx::subtract(values, mx::array(1.0f));
  }
  converted.arrays.emplace(hf_name, mx::astype(values, choice.dense_dtype.value_or(mx::float32)));
  return converted;
}

}  // namespace mlx_cpp::gguf
