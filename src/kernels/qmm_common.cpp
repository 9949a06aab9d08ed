#include <mlx/types/half_types.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/qmm_kernels.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels::qmm {

namespace {
template <typename T>
void convert_to_float(const T* src, int count, float* dst) {
  for (int i = 0; i < count; ++i) dst[i] = static_cast<float>(src[i]);
}
template <typename T>
void convert_from_float(const float* src, int count, T* dst) {
  for (int i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i]);
}
}  // namespace

void load_as_float(const void* src, ScalarType type, std::size_t offset, int count, float* dst) {
  using mlx::core::bfloat16_t;
  using mlx::core::float16_t;
  switch (type) {
    case ScalarType::float32:
      convert_to_float(static_cast<const float*>(src) + offset, count, dst);
      break;
    case ScalarType::bfloat16:
      convert_to_float(static_cast<const bfloat16_t*>(src) + offset, count, dst);
      break;
    case ScalarType::float16:
      convert_to_float(static_cast<const float16_t*>(src) + offset, count, dst);
      break;
  }
}

void store_from_float(const float* src, int count, void* dst, ScalarType type, std::size_t offset) {
  using mlx::core::bfloat16_t;
  using mlx::core::float16_t;
  switch (type) {
    case ScalarType::float32:
      convert_from_float(src, count, static_cast<float*>(dst) + offset);
      break;
    case ScalarType::bfloat16:
      convert_from_float(src, count, static_cast<bfloat16_t*>(dst) + offset);
      break;
    case ScalarType::float16:
      convert_from_float(src, count, static_cast<float16_t*>(dst) + offset);
      break;
  }
}

void store_row_block(const Problem& p, const float* result, int rows, int m0, int n_begin,
                     int columns) {
  for (int r = 0; r < rows; ++r) {
    const std::size_t offset = static_cast<std::size_t>(m0 + r) * p.N + n_begin;
    store_from_float(result + static_cast<std::size_t>(r) * columns, columns, p.out, p.out_type,
                     offset);
  }
}

int quantized_value(const std::uint8_t* packed_row, int k, int bits) {
  switch (bits) {
    case 8:
      return packed_row[k];
    case 4:
      return (packed_row[k / 2] >> ((k & 1) * 4)) & 0xF;
    default: {
      // Little-endian bit stream: value k occupies bits [6k, 6k + 6). Its
      // second byte is read only when the value reaches into it, so the
      // row's last value never reads past the row.
      const int bit = 6 * k, byte = bit / 8, shift = bit % 8;
      int window = packed_row[byte];
      if (shift > 2) window |= packed_row[byte + 1] << 8;
      return (window >> shift) & 0x3F;
    }
  }
}

int int8_padded_k(const IsaKernels& isa, int K) {
  return (K + isa.int8_k_align - 1) / isa.int8_k_align * isa.int8_k_align;
}

void quantize_activations(const IsaKernels& isa, const float* x, int M, int K, int bits,
                          std::int8_t* xq, float* xq_scales) {
  constexpr int kBlock = 32;
  const int k_padded = int8_padded_k(isa, K);
  const int scale_stride = k_padded / kBlock + 4;
  const int interleave = bits == 4 ? isa.int8_interleave : 1;
  std::vector<std::int8_t> natural(k_padded);
  for (int m = 0; m < M; ++m) {
    const float* row = x + static_cast<std::size_t>(m) * K;
    float* scales = xq_scales + static_cast<std::size_t>(m) * scale_stride;
    std::fill(scales, scales + scale_stride, 0.0f);
    std::fill(natural.begin(), natural.end(), 0);
    for (int b = 0; b * kBlock < K; ++b) {
      const float* block = row + b * kBlock;
      float amax = 0.0f;
      for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(block[i]));
      const float scale = amax / 127.0f;
      const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
      scales[b] = scale;
      for (int i = 0; i < kBlock; ++i) {
        natural[b * kBlock + i] = static_cast<std::int8_t>(std::lrintf(block[i] * inverse));
      }
    }
    std::int8_t* dst = xq + static_cast<std::size_t>(m) * k_padded;
    if (interleave == 1) {
      std::memcpy(dst, natural.data(), k_padded);
      continue;
    }
    // Each block of 2 * interleave k: the even k, then the odd k, so one
    // vector of packed bytes' low nibbles meets the first half.
    for (int chunk = 0; chunk < k_padded; chunk += 2 * interleave) {
      for (int i = 0; i < interleave; ++i) {
        dst[chunk + i] = natural[chunk + 2 * i];
        dst[chunk + interleave + i] = natural[chunk + 2 * i + 1];
      }
    }
  }
}

int int16_scale_stride(int k_padded, int group_size) {
  return (k_padded / group_size + 31) / 16 * 16;
}

void quantize_activations_int16(const float* x, int M, int K, int group_size, int k_padded,
                                bool even_odd, std::int16_t* x_i16, float* x_i16_scales) {
  const int stride = int16_scale_stride(k_padded, group_size);
  const auto& ops = vector_ops();
  std::vector<std::int16_t> natural(even_odd ? group_size : 0);
  for (int m = 0; m < M; ++m) {
    const float* row = x + static_cast<std::size_t>(m) * K;
    float* scales = x_i16_scales + static_cast<std::size_t>(m) * stride;
    std::int16_t* out = x_i16 + static_cast<std::size_t>(m) * k_padded;
    std::fill(scales, scales + stride, 0.0f);
    std::fill(out, out + k_padded, std::int16_t{0});
    for (int g = 0; g * group_size < K; ++g) {
      const int k0 = g * group_size;
      if (!even_odd) {
        scales[g] = ops.quantize_int16(row + k0, group_size, out + k0);
        continue;
      }
      scales[g] = ops.quantize_int16(row + k0, group_size, natural.data());
      for (int i = 0; i < group_size; ++i) out[even_odd_position(k0 + i)] = natural[i];
    }
  }
}

namespace {

// In MLX's layout, 4 k of a row are two bytes: k0 | k1 << 4, k2 | k3 << 4;
// interleaved, they are k0 | k2 << 4, k1 | k3 << 4. Swapping the two
// middle nibbles is its own inverse, so one function goes either way; only
// where the bytes sit differs.
void reorder_rows_q4(const std::uint8_t* from, int N, int K, std::uint8_t* to, bool interleave) {
  const int units = K / 4;
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * K / 2;
    const std::size_t lane = (static_cast<std::size_t>(n / 16) * units * 16 + n % 16) * 2;
    for (int u = 0; u < units; ++u) {
      const std::size_t in_row = row + 2 * u, in_block = lane + 32 * static_cast<std::size_t>(u);
      const std::uint8_t* in = from + (interleave ? in_row : in_block);
      std::uint8_t* out = to + (interleave ? in_block : in_row);
      const std::uint8_t first = in[0], second = in[1];
      out[0] = static_cast<std::uint8_t>((first & 0x0F) | (second & 0x0F) << 4);
      out[1] = static_cast<std::uint8_t>((first >> 4) | (second & 0xF0));
    }
  }
}

// In MLX's layout, 4 k of a row are 4 bytes k0 k1 k2 k3; interleaved they
// are k0 k2 k1 k3 (swapping the middle two, its own inverse).
void reorder_rows_q8(const std::uint8_t* from, int N, int K, std::uint8_t* to, bool interleave) {
  const int units = K / 4;
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * K;
    const std::size_t lane = (static_cast<std::size_t>(n / 16) * units * 16 + n % 16) * 4;
    for (int u = 0; u < units; ++u) {
      const std::size_t in_row = row + 4 * u, in_block = lane + 64 * static_cast<std::size_t>(u);
      const std::uint8_t* in = from + (interleave ? in_row : in_block);
      std::uint8_t* out = to + (interleave ? in_block : in_row);
      const std::uint8_t b0 = in[0], b1 = in[1], b2 = in[2], b3 = in[3];
      out[0] = b0;
      out[1] = b2;
      out[2] = b1;
      out[3] = b3;
    }
  }
}

// In MLX's layout, 4 k of a row are 3 bytes (a 24-bit run of the row's bit
// stream); interleaved, the same 3 bytes sit in the block's unit.
void reorder_rows_q6(const std::uint8_t* from, int N, int K, std::uint8_t* to, bool interleave) {
  const int units = K / 4;
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * K * 3 / 4;
    const std::size_t lane = (static_cast<std::size_t>(n / 16) * units * 16 + n % 16) * 3;
    for (int u = 0; u < units; ++u) {
      const std::size_t in_row = row + 3 * u, in_block = lane + 48 * static_cast<std::size_t>(u);
      std::memcpy(to + (interleave ? in_block : in_row), from + (interleave ? in_row : in_block),
                  3);
    }
  }
}

void reorder_rows(int bits, const std::uint8_t* from, int N, int K, std::uint8_t* to,
                  bool interleave) {
  switch (bits) {
    case 4:
      return reorder_rows_q4(from, N, K, to, interleave);
    case 6:
      return reorder_rows_q6(from, N, K, to, interleave);
    default:
      return reorder_rows_q8(from, N, K, to, interleave);
  }
}

// [N, groups] <-> [N / 16][groups][16] for items of type T.
template <class T>
void reorder_factors(const void* from, int N, int groups, void* to, bool interleave) {
  const T* src = static_cast<const T*>(from);
  T* dst = static_cast<T*>(to);
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * groups;
    const std::size_t lane = static_cast<std::size_t>(n / 16) * groups * 16 + n % 16;
    for (int g = 0; g < groups; ++g) {
      if (interleave)
        dst[lane + g * 16] = src[row + g];
      else
        dst[row + g] = src[lane + g * 16];
    }
  }
}

void reorder_factors(const void* from, std::size_t item_bytes, int N, int groups, void* to,
                     bool interleave) {
  if (item_bytes == 4)
    reorder_factors<std::uint32_t>(from, N, groups, to, interleave);
  else
    reorder_factors<std::uint16_t>(from, N, groups, to, interleave);
}

}  // namespace

void interleave_rows(int bits, const std::uint8_t* packed, int N, int K,
                     std::uint8_t* interleaved) {
  reorder_rows(bits, packed, N, K, interleaved, true);
}

void deinterleave_rows(int bits, const std::uint8_t* interleaved, int N, int K,
                       std::uint8_t* packed) {
  reorder_rows(bits, interleaved, N, K, packed, false);
}

void interleave_factors(const void* factors, std::size_t item_bytes, int N, int groups,
                        void* interleaved) {
  reorder_factors(factors, item_bytes, N, groups, interleaved, true);
}

void deinterleave_factors(const void* interleaved, std::size_t item_bytes, int N, int groups,
                          void* factors) {
  reorder_factors(interleaved, item_bytes, N, groups, factors, false);
}

float* thread_scratch(int slot, std::size_t count) {
  constexpr int kSlots = 4;
  thread_local std::vector<float> buffers[kSlots];
  auto& buffer = buffers[slot % kSlots];
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

}  // namespace mlx_cpp::kernels::qmm
