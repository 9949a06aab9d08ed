#include "kernels/gpu/quantized_matvec.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <algorithm>

#include "kernels/primitive_base.h"

namespace mlx_cpp::kernels::gpu {
namespace mx = mlx::core;

namespace {

// The kernel's body (MLX writes the signature: const T* x, x's shape (x is
// [rows, K]), const uint32_t* w, const S* scales, const S* biases, O* y,
// then the constants below). Template constants: N, K, MAX_ROWS (rows of x
// are at most that: one kernel serves 1, 2, 4 or 8 rows, so a batch of any
// size compiles four at most), GROUP_SIZE, BITS; types T (x), S (scales and
// biases), O (y).
constexpr const char* kSource = R"(
  constexpr int PER_WORD = 32 / BITS;     // codes in one uint32
  constexpr int CHUNK = 4 * PER_WORD;     // codes in one 16-byte load
  constexpr int CHUNKS = K / CHUNK;       // loads per weight column
  constexpr int WORDS = K / PER_WORD;     // uint32 words per weight column
  constexpr int GROUPS = K / GROUP_SIZE;
  constexpr int X_PER_LOAD = 16 / sizeof(T);
  constexpr uint32_t MASK = (1u << BITS) - 1u;

  const int rows = x_shape[0];
  const int lane = threadIdx.x & 31;
  const int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;  // whole warps only: n is the same in every lane
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
)";

constexpr int kWarpsPerBlock = 8;

const mx::fast::CustomKernelFunction& kernel() {
  static const auto function =
      mx::fast::cuda_kernel("mlx_cpp_quantized_matvec", {"x", "w", "scales", "biases"}, {"y"},
                            kSource, /*header=*/"", /*ensure_row_contiguous=*/true);
  return function;
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

mx::array quantized_matvec(const mx::array& x, const mx::array& w, const mx::array& scales,
                           const mx::array& biases, int group_size, int bits,
                           const mx::Stream& stream) {
  const int K = x.shape(-1), N = w.shape(0);
  const int rows = static_cast<int>(x.size() / K);
  const auto out_dtype = mx::promote_types(x.dtype(), scales.dtype());
  auto matrix = mx::reshape(x, {rows, K}, stream);
  // Blocks of kMaxRows rows, each row computed as it would be alone.
  std::vector<mx::array> blocks;
  for (int first = 0; first < rows; first += kMaxRows) {
    const int count = std::min(kMaxRows, rows - first);
    int max_rows = 1;
    while (max_rows < count) max_rows *= 2;
    auto block =
        rows <= kMaxRows ? matrix : mx::slice(matrix, {first, 0}, {first + count, K}, stream);
    const std::vector<std::pair<std::string, mx::fast::TemplateArg>> constants{
        {"N", N},       {"K", K},         {"MAX_ROWS", max_rows}, {"GROUP_SIZE", group_size},
        {"BITS", bits}, {"T", x.dtype()}, {"S", scales.dtype()},  {"O", out_dtype}};
    blocks.push_back(kernel()({block, w, scales, biases}, {{count, N}}, {out_dtype}, {N * 32, 1, 1},
                              {32 * kWarpsPerBlock, 1, 1}, constants, std::nullopt, false,
                              stream)[0]);
  }
  auto out = blocks.size() == 1 ? blocks.front() : mx::concatenate(blocks, 0, stream);
  auto shape = x.shape();
  shape.back() = N;
  return mx::reshape(out, shape, stream);
}

}  // namespace mlx_cpp::kernels::gpu
