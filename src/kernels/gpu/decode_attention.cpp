#include "kernels/gpu/decode_attention.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <map>
#include <mutex>
#include <string>

#include "kernels/primitive_base.h"

namespace mlx_cpp::kernels::gpu {
namespace mx = mlx::core;

namespace {

constexpr int kMaxRows = 64;
constexpr int kWarps = 4;

// The body after the row's cache is picked (`keys`, `values`, `capacity`).
// Inputs: queries [ROWS, HEADS, 1, D], meta int32 [ROWS, 2] (length,
// capacity), scale float32 [1], then k0, v0, k1, v1, ...; output out.
// Constants: HEADS, KV_HEADS, D, WARPS (per block); type T.
constexpr const char* kBody = R"(
  constexpr int PER_LANE = D / 32;  // this lane's query dimensions, contiguous
  const float negative_infinity = __int_as_float(0xff800000);
  const int head = blockIdx.x % HEADS;
  const int kv_head = head / (HEADS / KV_HEADS);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int length = meta[2 * row];
  const float query_scale = scale[0];

  float q[PER_LANE];
  const T* query = queries + (static_cast<size_t>(row) * HEADS + head) * D + lane * PER_LANE;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) q[i] = static_cast<float>(query[i]) * query_scale;

  // Online softmax over this warp's keys (every WARPS-th position).
  float running_max = negative_infinity, total = 0.0f;
  float acc[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) acc[i] = 0.0f;
  const size_t head_offset = static_cast<size_t>(kv_head) * capacity * D + lane * PER_LANE;
  for (int t = warp; t < length; t += WARPS) {
    const T* k = keys + head_offset + static_cast<size_t>(t) * D;
    float score = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) score = fmaf(q[i], static_cast<float>(k[i]), score);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      score += __shfl_xor_sync(0xffffffffu, score, offset);
    const float new_max = fmaxf(running_max, score);
    const float correction = expf(running_max - new_max);  // 0 at the first key
    const float weight = expf(score - new_max);
    total = fmaf(total, correction, weight);
    const T* v = values + head_offset + static_cast<size_t>(t) * D;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i)
      acc[i] = fmaf(weight, static_cast<float>(v[i]), acc[i] * correction);
    running_max = new_max;
  }

  // The warps' partial sums, combined by warp 0 in warp order.
  __shared__ float warp_max[WARPS], warp_total[WARPS];
  __shared__ float warp_acc[WARPS][D];
  if (lane == 0) {
    warp_max[warp] = running_max;
    warp_total[warp] = total;
  }
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) warp_acc[warp][lane * PER_LANE + i] = acc[i];
  __syncthreads();
  if (warp != 0) return;
  float overall_max = negative_infinity;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) overall_max = fmaxf(overall_max, warp_max[w]);
  float sum = 0.0f, result[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) result[i] = 0.0f;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    if (warp_max[w] == negative_infinity) continue;  // a warp that saw no key
    const float factor = expf(warp_max[w] - overall_max);
    sum = fmaf(warp_total[w], factor, sum);
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i)
      result[i] = fmaf(warp_acc[w][lane * PER_LANE + i], factor, result[i]);
  }
  T* destination = out + (static_cast<size_t>(row) * HEADS + head) * D + lane * PER_LANE;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) destination[i] = static_cast<T>(result[i] / sum);
)";

// The source for `rows` rows: the row's cache picked from its own inputs.
std::string source_for(int rows) {
  std::string source =
      "  const int row = blockIdx.x / HEADS;\n"
      "  const T* keys = nullptr;\n"
      "  const T* values = nullptr;\n"
      "  switch (row) {\n";
  for (int b = 0; b < rows; ++b) {
    const auto n = std::to_string(b);
    source += "    case " + n + ": keys = k" + n + "; values = v" + n + "; break;\n";
  }
  source +=
      "    default: return;\n"
      "  }\n"
      "  const size_t capacity = static_cast<size_t>(meta[2 * row + 1]);\n";
  return source + kBody;
}

const mx::fast::CustomKernelFunction& kernel_for(int rows) {
  static std::mutex mutex;
  static std::map<int, mx::fast::CustomKernelFunction> kernels;
  std::lock_guard lock(mutex);
  auto found = kernels.find(rows);
  if (found != kernels.end()) return found->second;
  std::vector<std::string> inputs{"queries", "meta", "scale"};
  for (int b = 0; b < rows; ++b) {
    inputs.push_back("k" + std::to_string(b));
    inputs.push_back("v" + std::to_string(b));
  }
  auto function =
      mx::fast::cuda_kernel("mlx_cpp_decode_attention_" + std::to_string(rows), inputs, {"out"},
                            source_for(rows), /*header=*/"", /*ensure_row_contiguous=*/true);
  return kernels.emplace(rows, std::move(function)).first->second;
}

}  // namespace

bool decode_attention_covers(const mx::array& queries, const std::vector<mx::array>& keys,
                             const std::vector<mx::array>& values, const std::vector<int>& lengths,
                             const mx::Stream& stream) {
  if (stream.device != mx::Device::gpu) return false;
  if (queries.ndim() != 4 || queries.shape(2) != 1 || !is_float_dtype(queries.dtype()))
    return false;
  const int rows = queries.shape(0), heads = queries.shape(1), head_dim = queries.shape(3);
  if (rows < 1 || rows > kMaxRows || head_dim % 32 != 0 || head_dim > 256) return false;
  if (static_cast<int>(keys.size()) != rows || static_cast<int>(values.size()) != rows ||
      static_cast<int>(lengths.size()) != rows)
    return false;
  const int kv_heads = keys.front().ndim() == 4 ? keys.front().shape(1) : 0;
  if (kv_heads < 1 || heads % kv_heads != 0) return false;
  for (int b = 0; b < rows; ++b)
    for (const auto* cache : {&keys[b], &values[b]}) {
      if (cache->ndim() != 4 || cache->shape(0) != 1 || cache->shape(1) != kv_heads ||
          cache->shape(3) != head_dim || cache->dtype() != queries.dtype())
        return false;
      if (lengths[b] < 1 || lengths[b] > cache->shape(2)) return false;
    }
  return true;
}

mx::array decode_attention(const mx::array& queries, const std::vector<mx::array>& keys,
                           const std::vector<mx::array>& values, const std::vector<int>& lengths,
                           float scale, const mx::Stream& stream) {
  const int rows = queries.shape(0), heads = queries.shape(1), head_dim = queries.shape(3);
  const int kv_heads = keys.front().shape(1);
  std::vector<int32_t> meta;
  for (int b = 0; b < rows; ++b) {
    meta.push_back(lengths[b]);
    meta.push_back(keys[b].shape(2));
  }
  std::vector<mx::array> inputs{queries, mx::array(meta.data(), {rows, 2}, mx::int32),
                                mx::array({scale}, mx::float32)};
  for (int b = 0; b < rows; ++b) {
    inputs.push_back(keys[b]);
    inputs.push_back(values[b]);
  }
  const std::vector<std::pair<std::string, mx::fast::TemplateArg>> constants{
      {"HEADS", heads},
      {"KV_HEADS", kv_heads},
      {"D", head_dim},
      {"WARPS", kWarps},
      {"T", queries.dtype()}};
  return kernel_for(rows)(inputs, {queries.shape()}, {queries.dtype()},
                          {rows * heads * 32 * kWarps, 1, 1}, {32 * kWarps, 1, 1}, constants,
                          std::nullopt, false, stream)[0];
}

}  // namespace mlx_cpp::kernels::gpu
