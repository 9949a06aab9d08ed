#include "kernels/gpu/quantized_matvec.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "kernels/primitive_base.h"

namespace mlx_cpp::kernels::gpu {
namespace mx = mlx::core;

namespace {

// One warp's output column, as a device function the kernels below call
// for whichever matrix the warp's column falls in. Template arguments: x's
// type T, the factors' type S, the output's O, K, MAX_ROWS (rows of x are
// at most that: one kernel serves 1, 2, 4 or 8 rows, so a batch of any size
// compiles four at most), GROUP_SIZE, BITS.
constexpr const char* kColumnFunction = R"(
template <typename T, typename S, typename O, int K, int MAX_ROWS, int GROUP_SIZE, int BITS>
__device__ void quantized_matvec_column(const T* x, int rows, const uint32_t* w, const S* scales,
                                        const S* biases, O* y, int N, int n) {
  constexpr int PER_WORD = 32 / BITS;     // codes in one uint32
  constexpr int CHUNK = 4 * PER_WORD;     // codes in one 16-byte load
  constexpr int CHUNKS = K / CHUNK;       // loads per weight column
  constexpr int WORDS = K / PER_WORD;     // uint32 words per weight column
  constexpr int GROUPS = K / GROUP_SIZE;
  constexpr int X_PER_LOAD = 16 / sizeof(T);
  constexpr uint32_t MASK = (1u << BITS) - 1u;

  const int lane = threadIdx.x & 31;
  // Slices can start anywhere: 16-byte loads only where both x and the
  // weights are 16-byte aligned (row lengths keep the alignment: K is a
  // multiple of 32).
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w)) & 15u) == 0;

  float acc[MAX_ROWS];
#pragma unroll
  for (int m = 0; m < MAX_ROWS; ++m) acc[m] = 0.0f;

  const uint32_t* column = w + static_cast<size_t>(n) * WORDS;
  const S* column_scales = scales + static_cast<size_t>(n) * GROUPS;
  const S* column_biases = biases + static_cast<size_t>(n) * GROUPS;

#pragma unroll 4
  for (int c = lane; c < CHUNKS; c += 32) {
    uint32_t words[4];
    if (aligned) {
      const uint4 packed = reinterpret_cast<const uint4*>(column)[c];
      words[0] = packed.x; words[1] = packed.y; words[2] = packed.z; words[3] = packed.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) words[j] = column[c * 4 + j];
    }
    const int k0 = c * CHUNK;
    const float scale = static_cast<float>(column_scales[k0 / GROUP_SIZE]);
    const float bias = static_cast<float>(column_biases[k0 / GROUP_SIZE]);
    float q[CHUNK];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < PER_WORD; ++i)
        q[j * PER_WORD + i] = static_cast<float>((words[j] >> (i * BITS)) & MASK);

#pragma unroll
    for (int m = 0; m < MAX_ROWS; ++m) {
      if (m >= rows) break;
      const T* row = x + static_cast<size_t>(m) * K + k0;
      float values[CHUNK];
      if (aligned) {
#pragma unroll
        for (int v = 0; v < CHUNK / X_PER_LOAD; ++v) {
          const uint4 raw = reinterpret_cast<const uint4*>(row)[v];
          const T* elements = reinterpret_cast<const T*>(&raw);
#pragma unroll
          for (int i = 0; i < X_PER_LOAD; ++i)
            values[v * X_PER_LOAD + i] = static_cast<float>(elements[i]);
        }
      } else {
#pragma unroll
        for (int i = 0; i < CHUNK; ++i) values[i] = static_cast<float>(row[i]);
      }
      // dequantize(q) = scale * q + bias, so x . w = scale (x . q) + bias sum(x).
      float dot = 0.0f, total = 0.0f;
#pragma unroll
      for (int i = 0; i < CHUNK; ++i) {
        dot = fmaf(values[i], q[i], dot);
        total += values[i];
      }
      acc[m] = fmaf(scale, dot, fmaf(bias, total, acc[m]));
    }
  }

#pragma unroll
  for (int m = 0; m < MAX_ROWS; ++m) {
    if (m >= rows) break;
    float sum = acc[m];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[static_cast<size_t>(m) * N + n] = static_cast<O>(sum);
  }
}
)";

// The kernel of `count` matrices (MLX writes its signature: const T* x,
// x's shape (x is [rows, K]), then w0, scales0, biases0, w1, ... and the
// outputs y0, y1, ...; constants N0, N1, ... and the column function's).
// Warps take the columns of every matrix in turn, so projections that read
// one x (queries, keys and values; gate and up) are one launch: a decode
// step is bound by launches, not by these kernels' bytes.
std::string kernel_source(int count) {
  std::string source =
      "  const int rows = x_shape[0];\n"
      "  int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;\n";
  for (int i = 0; i < count; ++i) {
    const auto at = std::to_string(i);
    // Whole warps only: n is the same in every lane.
    source += "  if (n < N" + at + ") {\n    quantized_matvec_column<T, S, O, K, MAX_ROWS, " +
              "GROUP_SIZE, BITS>(x, rows, w" + at + ", scales" + at + ", biases" + at + ", y" + at +
              ", N" + at + ", n);\n    return;\n  }\n  n -= N" + at + ";\n";
  }
  return source;
}

constexpr int kWarpsPerBlock = 8;

const mx::fast::CustomKernelFunction& kernel(int count) {
  auto make = [](int count) {
    std::vector<std::string> inputs{"x"}, outputs;
    for (int i = 0; i < count; ++i) {
      const auto at = std::to_string(i);
      inputs.insert(inputs.end(), {"w" + at, "scales" + at, "biases" + at});
      outputs.push_back("y" + at);
    }
    return mx::fast::cuda_kernel("mlx_cpp_quantized_matvec_" + std::to_string(count), inputs,
                                 outputs, kernel_source(count), kColumnFunction,
                                 /*ensure_row_contiguous=*/true);
  };
  static const std::array<mx::fast::CustomKernelFunction, kMaxMatrices> functions{make(1), make(2),
                                                                                  make(3)};
  return functions.at(count - 1);
}

}  // namespace

bool quantized_matvec_covers(const mx::array& x, const mx::array& w, const mx::array& scales,
                             int group_size, int bits, const mx::Stream& stream) {
  if (stream.device != mx::Device::gpu) return false;
  if ((bits != 4 && bits != 8) || (group_size != 32 && group_size != 64 && group_size != 128))
    return false;
  if (x.ndim() < 1 || !is_float_dtype(x.dtype()) || !is_float_dtype(scales.dtype())) return false;
  if (w.dtype() != mx::uint32 || w.ndim() != 2) return false;
  const int K = x.shape(-1);
  if (K % group_size != 0 || w.shape(1) * 32 / bits != K) return false;
  const auto rows = x.size() / K;
  // Decode-shaped: a few rows, or one token of each of B sequences.
  const bool one_token_each = x.ndim() == 3 && x.shape(1) == 1;
  return rows >= 1 && (rows <= static_cast<std::size_t>(kMaxRows) || one_token_each);
}

std::vector<mx::array> quantized_matvecs(const mx::array& x,
                                         const std::vector<QuantizedWeights>& weights,
                                         int group_size, int bits, const mx::Stream& stream) {
  const int K = x.shape(-1);
  const int rows = static_cast<int>(x.size() / K);
  auto matrix = mx::reshape(x, {rows, K}, stream);
  std::vector<std::vector<mx::array>> blocks(weights.size());
  // Blocks of kMaxRows rows, each row computed as it would be alone; each
  // launch takes up to kMaxMatrices consecutive matrices whose factors share
  // a dtype.
  for (int first = 0; first < rows; first += kMaxRows) {
    const int count = std::min(kMaxRows, rows - first);
    int max_rows = 1;
    while (max_rows < count) max_rows *= 2;
    auto block =
        rows <= kMaxRows ? matrix : mx::slice(matrix, {first, 0}, {first + count, K}, stream);
    for (std::size_t start = 0, end = 0; start < weights.size(); start = end) {
      const auto factors = weights[start].scales.dtype();
      end = start + 1;
      while (end < weights.size() && end - start < kMaxMatrices &&
             weights[end].scales.dtype() == factors)
        ++end;
      const auto out_dtype = mx::promote_types(x.dtype(), factors);
      std::vector<mx::array> inputs{block};
      std::vector<mx::Shape> shapes;
      std::vector<std::pair<std::string, mx::fast::TemplateArg>> constants{
          {"K", K},        {"MAX_ROWS", max_rows}, {"GROUP_SIZE", group_size},
          {"BITS", bits},  {"T", x.dtype()},       {"S", factors},
          {"O", out_dtype}};
      int columns = 0;
      for (auto i = start; i < end; ++i) {
        const auto& q = weights[i];
        const int N = q.w.shape(0);
        inputs.insert(inputs.end(), {q.w, q.scales, q.biases});
        shapes.push_back({count, N});
        constants.emplace_back("N" + std::to_string(i - start), N);
        columns += N;
      }
      auto outputs = kernel(static_cast<int>(end - start))(
          inputs, shapes, std::vector<mx::Dtype>(shapes.size(), out_dtype), {columns * 32, 1, 1},
          {32 * kWarpsPerBlock, 1, 1}, constants, std::nullopt, false, stream);
      for (auto i = start; i < end; ++i) blocks[i].push_back(outputs[i - start]);
    }
  }
  std::vector<mx::array> results;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    auto out = blocks[i].size() == 1 ? blocks[i].front() : mx::concatenate(blocks[i], 0, stream);
    auto shape = x.shape();
    shape.back() = weights[i].w.shape(0);
    results.push_back(mx::reshape(out, shape, stream));
  }
  return results;
}

mx::array quantized_matvec(const mx::array& x, const mx::array& w, const mx::array& scales,
                           const mx::array& biases, int group_size, int bits,
                           const mx::Stream& stream) {
  return quantized_matvecs(x, {{w, scales, biases}}, group_size, bits, stream).front();
}

}  // namespace mlx_cpp::kernels::gpu
