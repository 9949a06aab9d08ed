#pragma once
// Internal interface between the quantized matmul primitive and its per-ISA
// kernels (scalar, AVX2, AVX-512). Everything here is plain data and
// function pointers so that the SIMD translation units can be compiled with
// their own target options without sharing inline code with the rest.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mlx_cpp::kernels::qmm {

enum class ScalarType { float32, bfloat16, float16 };

// out[M, N] = x[M, K] @ dequant(w)^T with w = scale * q + bias per group of
// `group_size` consecutive k. The k order of x is the kernel's order (see
// IsaKernels::interleave); w's packing is MLX's: LSB-first along k, bits
// 4, 6 or 8 (gemv_int8 and gemv_bf16_q4: see below).
struct Problem {
  const float* x;             // [M, K] float32, interleaved for the ISA
  const float* x_group_sums;  // [M, K / group_size] sums of x per group
  const std::uint8_t* w;      // [N, K * bits / 8]
  const void* scales;         // [N, K / group_size]
  const void* biases;         // [N, K / group_size]
  ScalarType scale_type;
  void* out;  // [M, N]
  ScalarType out_type;
  int M, N, K, group_size, bits;
  // Only for gemv_int8: x quantized to int8 per 32 consecutive k (scale =
  // max |x| / 127 of those 32), rows `k_padded` apart (K rounded up to the
  // ISA's int8_k_align, zero-filled); 4-bit weights take x in the ISA's
  // int8_interleave order. xq_scales rows are k_padded / 32 + 4 apart (the
  // extra entries are zero, so kernels may load 4 at a time).
  const std::int8_t* xq = nullptr;
  const float* xq_scales = nullptr;
  int k_padded = 0;
  // Only for gemv_bf16_q4: x rounded to bfloat16, rows k_padded (K rounded
  // up to 64, zero-filled) apart, each 64 k as the 32 even k then the 32 odd
  // k; x_group_sums are then sums of the rounded x.
  const std::uint16_t* x_bf16 = nullptr;
  // Only for gemv_int16_q4/q6: x rounded to int16 per group of k (scale = max
  // |x| / 32767 of the group), rows k_padded (K rounded up to 64,
  // zero-filled) apart, each 64 k as the 32 even k then the 32 odd k;
  // x_i16_scales rows int16_scale_stride(k_padded, group_size) apart, zero
  // past the row's groups. x_group_sums stay the sums of the exact x.
  const std::int16_t* x_i16 = nullptr;
  const float* x_i16_scales = nullptr;
  // Only for gemm_half: x in the table's half type [M, K] (natural k
  // order), each row scaled by a power of two (float16) or not (bfloat16,
  // which has float32's range); x_half_unscale[m] undoes row m's scaling.
  const std::uint16_t* x_half = nullptr;
  const float* x_half_unscale = nullptr;
  // 4-, 6- or 8-bit weights in the row-interleaved layout (see
  // interleave_rows) instead of MLX's; read by gemv_int16_rows, gemm_half
  // and gemm_rows, whose column ranges then start at multiples of 16. x_i16
  // is then in natural k order.
  bool row_interleaved = false;
};

// For a half-precision GEMM whose panels hold the weights' exact codes
// (gemm_half on AVX512-BF16): one k-depth's scales and biases of the
// panel's 32 columns, float32 [depth / group][32], and the float32 sums
// of x over those groups (row r's at x_sums + r x x_sums_stride).
struct GroupFactors {
  const float* scales = nullptr;
  const float* biases = nullptr;
  int group = 0;
  const float* x_sums = nullptr;
  int x_sums_stride = 0;
};

struct IsaKernels {
  const char* name;
  // 4-bit kernels unpack `2 * interleave` weights at a time as the even ones
  // then the odd ones; x is stored in that order (1 = natural order).
  int interleave;
  // Columns per dequantized weight panel in gemm; gemm ranges start at
  // multiples of it.
  int column_block;
  // Rows [0, M) x columns [n_begin, n_end), streaming each weight once per
  // call; for few rows (decode).
  void (*gemv)(const Problem& p, int n_begin, int n_end);
  // Same contract, for many rows (prefill): weights are dequantized to a
  // float panel once and reused for all rows.
  void (*gemm)(const Problem& p, int n_begin, int n_end);
  // Decode with 8-bit activations and integer dot products: same contract
  // as gemv, reading xq / xq_scales instead of x (x_group_sums still gives
  // the bias term exactly). Null where the CPU has no integer dot product
  // instruction worth it; the float gemv is used then.
  void (*gemv_int8)(const Problem& p, int n_begin, int n_end) = nullptr;
  // 4-bit x order for gemv_int8: within each block of 2 * interleave k, the
  // even k then the odd k (1 = natural order).
  int int8_interleave = 1;
  // k_padded is a multiple of this.
  int int8_k_align = 32;
  // Decode with 4-bit weights and bfloat16 activations (reads x_bf16, with
  // k_padded a multiple of 64); null where the CPU has no bfloat16 dot
  // product instruction, and the float gemv then runs on the rounded x.
  void (*gemv_bf16_q4)(const Problem& p, int n_begin, int n_end) = nullptr;
  // Decode with 4-bit weights and 16-bit integer activations (reads x_i16
  // and x_i16_scales, k_padded a multiple of 64); null where the CPU has
  // no 16-bit integer dot product instruction, and the float gemv then
  // runs on the exact x.
  void (*gemv_int16_q4)(const Problem& p, int n_begin, int n_end) = nullptr;
  // The same for 6-bit weights (AVX-512 VBMI unpacks them) and 8-bit ones.
  void (*gemv_int16_q6)(const Problem& p, int n_begin, int n_end) = nullptr;
  void (*gemv_int16_q8)(const Problem& p, int n_begin, int n_end) = nullptr;
  // The same for row-interleaved 4-, 6- and 8-bit weights.
  void (*gemv_int16_rows)(const Problem& p, int n_begin, int n_end) = nullptr;
  // gemm's contract and arithmetic (float32, x in the order `interleave`
  // gives) for row-interleaved weights, column ranges starting at
  // multiples of 16; null where gemm_half reads that layout or nothing
  // does.
  void (*gemm_rows)(const Problem& p, int n_begin, int n_end) = nullptr;
  // Prefill in half precision (reads x_half): float16 products summed
  // over short runs into float32 on AVX512-FP16, bfloat16 pairs summed in
  // float32 on AVX512-BF16; for 4, 6 and 8 bits; column ranges start at
  // multiples of half_column_block. Null where the CPU has neither; the
  // float32 gemm runs then.
  void (*gemm_half)(const Problem& p, int n_begin, int n_end) = nullptr;
  int half_column_block = 32;
  // "float16" or "bfloat16": what gemm_half multiplies in.
  const char* half_name = nullptr;
  // Fills x_half and x_half_unscale from x [M, K] (float32, natural order).
  void (*prepare_x_half)(const float* x, int M, int K, std::uint16_t* x_half,
                         float* unscale) = nullptr;
};

// The raw quantized value at k of one packed weight row (bits 4, 6 or 8,
// MLX's packing: LSB-first along k; 6-bit values as one little-endian bit
// stream, four values in three bytes).
int quantized_value(const std::uint8_t* packed_row, int k, int bits);

// Quantizes x rows [M, K] (natural k order, float32) into the int8 layout
// above for the given ISA table and bits; xq holds M * k_padded values and
// xq_scales M * (k_padded / 32 + 4).
int int8_padded_k(const IsaKernels& isa, int K);
void quantize_activations(const IsaKernels& isa, const float* x, int M, int K, int bits,
                          std::int8_t* xq, float* xq_scales);

// The layout of Problem::x_bf16 and x_i16: rows of K rounded up to 64,
// each 64 k as the 32 even k then the 32 odd k (the order in which the low
// and high nibbles of 32 packed bytes come out).
constexpr int even_odd_padded_k(int K) {
  return (K + 63) / 64 * 64;
}
constexpr int even_odd_position(int k) {
  return k / 64 * 64 + (k % 2) * 32 + k % 64 / 2;
}

// Rows of x [M, K] (natural k order, float32) rounded to int16 in the
// layout of Problem::x_i16 (natural k order unless `even_odd`), with their
// scales.
int int16_scale_stride(int k_padded, int group_size);
void quantize_activations_int16(const float* x, int M, int K, int group_size, int k_padded,
                                bool even_odd, std::int16_t* x_i16, float* x_i16_scales);

// The row-interleaved layout of 4-, 6- and 8-bit weights [N, K] (N a
// multiple of 16): per block of 16 rows and 4 k (k0 .. k0 + 3), a unit of
// 16 x 4 x bits / 8 bytes, each row's share contiguous. At 4 bits a row's
// two bytes hold k0 (low nibble) and k0 + 2 (high nibble), then k0 + 1 and
// k0 + 3: zero-extended to 16-bit lanes and masked, the 32 bytes give the
// pairs (k0, k0 + 1) of 16 rows; shifted, the pairs (k0 + 2, k0 + 3). At 8
// bits a row's four bytes are k0, k0 + 2, k0 + 1, k0 + 3, so the 64 bytes
// as 16-bit lanes, masked or shifted, give the same pairs with no
// widening. At 6 bits a row's three bytes are MLX's for those 4 k
// (qmm_avx512_rows_q6.inc spreads them to the same pairs).
// A 32-bit broadcast of x's pair meets them in one vpdpwssd, each lane a
// row, so a gemv needs no horizontal sums and loads 16 rows' scales at
// once. Scales and biases go [N / 16][groups][16]. Blocks follow each
// other, k-major within a block.
void interleave_rows(int bits, const std::uint8_t* packed, int N, int K, std::uint8_t* interleaved);
void deinterleave_rows(int bits, const std::uint8_t* interleaved, int N, int K,
                       std::uint8_t* packed);
// Factors [N, groups] of `item_bytes` each to [N / 16][groups][16] and back.
void interleave_factors(const void* factors, std::size_t item_bytes, int N, int groups,
                        void* interleaved);
void deinterleave_factors(const void* interleaved, std::size_t item_bytes, int N, int groups,
                          void* factors);

// Decode shape: up to this many rows of x, a kernel streams each weight row
// once per call (gemv); above it, weights go through dequantized panels.
constexpr int kGemvMaxRows = 4;

// Weight rows (output columns) a gemv handles at once for `rows` rows of x:
// independent accumulators hide the FMA latency (one column alone is a
// dependent chain and runs at a third of the machine's speed) while
// rows x columns accumulators still fit in registers.
constexpr int gemv_columns(int rows) {
  return rows == 1 ? 4 : rows == 2 ? 2 : 1;
}

// Rows [m0, m0 + Rows) of an int16 decode's x: each row's values, its
// per-group scales and its `groups` group sums (the bias term's factor).
template <int Rows>
struct Int16RowsOfX {
  const std::int16_t* values[Rows];
  const float* scales[Rows];
  const float* sums[Rows];
  Int16RowsOfX(const Problem& p, int m0, int groups) {
    const int scale_stride = int16_scale_stride(p.k_padded, p.group_size);
    for (int r = 0; r < Rows; ++r) {
      values[r] = p.x_i16 + static_cast<std::size_t>(m0 + r) * p.k_padded;
      scales[r] = p.x_i16_scales + static_cast<std::size_t>(m0 + r) * scale_stride;
      sums[r] = p.x_group_sums + static_cast<std::size_t>(m0 + r) * groups;
    }
  }
};

// Calls kernel(std::integral_constant<int, Rows>{}, m0) for each block of
// at most kGemvMaxRows rows of [0, M), so a gemv keeps its row count a
// compile-time constant.
template <class Kernel>
void for_each_row_block(int M, Kernel&& kernel) {
  for (int m0 = 0; m0 < M; m0 += kGemvMaxRows) {
    switch (M - m0) {
      case 1:
        kernel(std::integral_constant<int, 1>{}, m0);
        break;
      case 2:
        kernel(std::integral_constant<int, 2>{}, m0);
        break;
      case 3:
        kernel(std::integral_constant<int, 3>{}, m0);
        break;
      default:
        static_assert(kGemvMaxRows == 4);
        kernel(std::integral_constant<int, 4>{}, m0);
        break;
    }
  }
}

// Calls block(std::integral_constant<int, Cols>{}, n) over [n_begin, n_end)
// in blocks of gemv_columns(Rows) columns, then single columns for the rest.
template <int Rows, class Block>
void for_each_column_block(int n_begin, int n_end, Block&& block) {
  constexpr int kColumns = gemv_columns(Rows);
  int n = n_begin;
  for (; n + kColumns <= n_end; n += kColumns) block(std::integral_constant<int, kColumns>{}, n);
  for (; n < n_end; ++n) block(std::integral_constant<int, 1>{}, n);
}

const IsaKernels& scalar_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();

#if defined(__x86_64__) || defined(__i386__)
// The AVX2 gemv_int16_q4, _q6 and _q8 (vpmaddwd; qmm_avx2_int16.cpp).
void avx2_gemv_int16_q4(const Problem& p, int n_begin, int n_end);
void avx2_gemv_int16_q6(const Problem& p, int n_begin, int n_end);
void avx2_gemv_int16_q8(const Problem& p, int n_begin, int n_end);
// The AVX2 gemv_int16_rows (vpmaddwd over row-interleaved weights;
// qmm_avx2_int16_rows.cpp).
void avx2_gemv_int16_rows(const Problem& p, int n_begin, int n_end);
// The AVX-512 VNNI gemv_int8 (int8_interleave 64, int8_k_align 128); the
// AVX-512 table offers it where the CPU has VNNI.
void avx512_vnni_gemv_int8(const Problem& p, int n_begin, int n_end);
// The AVX-512 BF16 gemv_bf16_q4; the AVX-512 table offers it where the CPU
// has AVX512_BF16.
void avx512_bf16_gemv_q4(const Problem& p, int n_begin, int n_end);
// The AVX512-FP16 gemm_half and its x preparation; the AVX-512 table
// offers them where the CPU has AVX512-FP16.
void avx512_fp16_gemm(const Problem& p, int n_begin, int n_end);
void prepare_x_float16(const float* x, int M, int K, std::uint16_t* x_half, float* unscale);
// The AVX512-BF16 gemm_half and its x preparation (unscale 1); the AVX-512
// table offers them where the CPU has AVX512-BF16 but not AVX512-FP16.
void avx512_bf16_gemm(const Problem& p, int n_begin, int n_end);
void prepare_x_bfloat16(const float* x, int M, int K, std::uint16_t* x_half, float* unscale);
// The AVX-512 VNNI gemv_int16_q4 and _q8 and the VNNI + VBMI gemv_int16_q6; the
// AVX-512 table offers them where the CPU has those features.
void avx512_vnni_gemv_int16_q4(const Problem& p, int n_begin, int n_end);
void avx512_vbmi_gemv_int16_q6(const Problem& p, int n_begin, int n_end);
void avx512_vnni_gemv_int16_q8(const Problem& p, int n_begin, int n_end);
void avx512_vnni_gemv_int16_rows(const Problem& p, int n_begin, int n_end);
#endif

// Helpers the kernels share, compiled for the baseline ISA.
void load_as_float(const void* src, ScalarType type, std::size_t offset, int count, float* dst);
void store_from_float(const float* src, int count, void* dst, ScalarType type, std::size_t offset);
// Writes a gemv's float block result[rows][columns] to output rows
// [m0, m0 + rows), columns [n_begin, n_begin + columns).
void store_row_block(const Problem& p, const float* result, int rows, int m0, int n_begin,
                     int columns);
// A per-thread buffer of at least `count` floats; `slot` tells apart the
// buffers one kernel needs at the same time.
float* thread_scratch(int slot, std::size_t count);

}  // namespace mlx_cpp::kernels::qmm
