#pragma once
// mlx-cpp's own CPU kernels as MLX ops. Each op computes the same math as a
// stock MLX op (named per function) up to float rounding, validates its
// inputs here (std::invalid_argument naming the op and the values: kernels
// sit below io/ and do not use mlx_cpp::Error), and evaluates through an MLX
// primitive whose CPU implementation is multi-threaded and SIMD (AVX2 or
// AVX-512, picked at run time; a portable scalar path otherwise). On a
// non-CPU stream the op returns its stock-op fallback, except where a GPU
// kernel of our own covers the call (kernels/gpu/). The caller decides
// per call site whether to use these or the stock ops. cpu_features.h can
// cap the SIMD level (tests, benchmarks).
#include <mlx/array.h>
#include <mlx/utils.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlx_cpp::kernels {

// x @ dequantize(w)^T, as mlx::core::quantized_matmul(x, w, scales, biases,
// /*transpose=*/true, group_size, bits, "affine").
//   x:       [..., K] float32 / bfloat16 / float16
//   w:       [N, K * bits / 32] uint32, MLX affine packing (LSB first)
//   scales, biases: [N, K / group_size], float32 / bfloat16 / float16 (same)
//   bits 4, 6 or 8, group_size 32, 64 or 128.
// Returns [..., N] in promote_types(x.dtype(), scales.dtype()).
// Accumulates in float32: within one output rounding of the stock op run on
// float32 inputs. The stock CPU op accumulates bfloat16 inputs in bfloat16,
// so on bfloat16 the two differ by the stock op's own error (several % of
// max |out| measured; docs/benchmarks.md).
//
// Decode-shaped calls: at most 4 rows of x, or x [B, 1, K] at any B (one
// token of each of B sequences). Their rows are computed in blocks of at
// most 4 by the gemv kernels, each row as it would be alone.
//
// ActivationPrecision::int8 lets decode-shaped calls
// quantize x to int8 per block of 32 k (scale max |x| / 127, round to
// nearest) and take integer dot products, where the CPU has them (AVX-512
// VNNI; elsewhere, for 6-bit weights and for more rows, the float32 path
// runs). The bias
// term still uses float32 sums of x. Error: that of rounding x to 8 bits,
// at most 0.4% of each block's largest |x| per element, bounded per output
// in tests/kernels (quantized_matmul_test.cpp). The model does not use it:
// on real activations with outlier channels it derailed generation.
//
// ActivationPrecision::bfloat16 rounds x of decode-shaped calls to bfloat16
// (round to nearest even) before the dot products, which accumulate in
// float32; 4-bit weights then take bfloat16 dot products where the CPU has
// them (AVX-512 BF16), and every other case runs the float32 kernels on the
// rounded x. Error: that of rounding x, 2^-9 relative per element, with no
// outlier effect (each element keeps its own exponent).
//
// ActivationPrecision::int16 rounds x of decode-shaped calls to int16 per
// group (scale max |x| / 32767, round to nearest) and takes 16-bit integer
// dot products where the CPU has them (AVX-512 VNNI, plus VBMI for 6 bits,
// and the portable reference); every other case runs the float32 kernels
// on the exact x. Error: at most
// max |x in group| / 65534 per element, below bfloat16's for every element
// within a factor 128 of its group's largest; bounded per output in
// tests/kernels.
enum class ActivationPrecision { float32, int8, bfloat16, int16 };
//
// PrefillArithmetic::half lets prefill-shaped calls (more than 4 rows of
// x) multiply in half precision, twice the float32 FMA's multiply-adds per
// instruction:
// - float16 where the CPU has AVX512-FP16: x and the dequantized weights
//   are rounded to float16 (x scaled per row by a power of two so its
//   largest |value| is 32), products are summed in float16 over runs of 32
//   k and those partial sums in float32;
// - else bfloat16 where it has AVX512-BF16 (AMD Zen 4 and 5): x is rounded
//   to bfloat16 (2^-9 relative) and meets the weights' codes, which
//   bfloat16 holds exactly; products are summed in float32 (vdpbf16ps) and
//   each group is scaled, and its bias term added, in float32;
// - else the float32 kernels run.
// Error bounded per output in tests/kernels.
enum class PrefillArithmetic { float32, half };
mlx::core::array quantized_matmul_fast(const mlx::core::array& x, const mlx::core::array& w,
                                       const mlx::core::array& scales,
                                       const mlx::core::array& biases, int group_size, int bits,
                                       ActivationPrecision precision = ActivationPrecision::float32,
                                       PrefillArithmetic prefill = PrefillArithmetic::float32,
                                       mlx::core::StreamOrDevice s = {});

// Several quantized projections of one x (attention's q, k and v; an MLP's
// gate and up), each as quantized_matmul_fast: one graph node, x prepared
// once, and the columns of all the weights spread over the threads as one
// job. All share group_size and bits; results in the order given.
// How w, scales and biases are laid out: MLX's ([N, K * bits / 32] uint32,
// factors [N, groups]) or row-interleaved (4-, 6- and 8-bit, N a multiple
// of 16: w uint8 [N, K x bits / 8] in blocks of 16 rows x 4 k, factors
// [N / 16][groups][16]; see qmm_kernels.h), which the int16 decode kernel
// reads with one lane per row and no per-row overhead (2-3x the weights
// per second at K = 576) and the half-precision prefill packs without a
// transpose.
enum class WeightLayout { mlx, row_interleaved };
struct QuantizedWeights {
  mlx::core::array w, scales, biases;
  WeightLayout layout = WeightLayout::mlx;
};
// Whether row-interleaved weights run faster here: 4, 6 or 8 bits, a
// multiple of 16 rows, and a CPU with the kernels that read the layout
// (AVX-512 VNNI and a half-precision prefill, or AVX2 with its int16 decode
// and float32 prefill); elsewhere they would be put back in MLX's layout on
// every call.
bool row_interleaving_pays(int bits, int rows);
// The kernel a quantized matmul of `bits`-bit weights takes on this CPU at
// the current SIMD limit, decode- or prefill-shaped, with the given
// precision choices: "<arithmetic> <gemv|gemm> <isa>[ row-interleaved]",
// e.g. "int16 gemv avx2" (weights of a multiple of 16 rows are assumed to
// be interleaved where that pays). For reports such as `mlx-cpp bench`.
std::string quantized_matmul_variant(int bits, bool decode, ActivationPrecision precision,
                                     PrefillArithmetic prefill);
// 4-, 6- or 8-bit weights in MLX's layout (evaluated here) →
// row-interleaved copies.
QuantizedWeights to_row_interleaved(const QuantizedWeights& weights, int group_size, int bits);
// The rows `ids` (any shape S) of weights in either layout, in MLX's layout
// (w uint32 [S..., K x bits / 32], factors [S..., groups]): the same bytes,
// so their dequantized values are the stock lookup's. Lazy MLX ops.
QuantizedWeights gather_rows(const QuantizedWeights& weights, const mlx::core::array& ids,
                             int group_size, int bits);
// The codes of affine-quantized weights w (uint32 [rows, K * from_bits /
// 32], MLX's layout: a little-endian bit stream per row) repacked at
// to_bits > from_bits: the same integers, so with the same scales and
// biases the same weights, in a width the kernels read (5 → 6, 2 or 3 → 4).
// Evaluates w.
mlx::core::array widen_quantized_codes(const mlx::core::array& w, int from_bits, int to_bits);
std::vector<mlx::core::array> quantized_matmuls_fast(
    const mlx::core::array& x, const std::vector<QuantizedWeights>& weights, int group_size,
    int bits, ActivationPrecision precision = ActivationPrecision::float32,
    PrefillArithmetic prefill = PrefillArithmetic::float32, mlx::core::StreamOrDevice s = {});

// x * rsqrt(mean(x^2, -1) + eps) * weight, as mlx::core::fast::rms_norm:
// statistics in float32; the normalized x is rounded to the output dtype
// before the weight multiplies it, as the stock op does. Output dtype:
// result_type(x, weight), or x's without a weight.
mlx::core::array rms_norm_fast(const mlx::core::array& x,
                               const std::optional<mlx::core::array>& weight, float eps,
                               mlx::core::StreamOrDevice s = {});

// The residual add before a norm in one pass: returns {x + residual,
// rms_norm_fast(x + residual, weight, eps)}, the sum in
// promote_types(x, residual) and rounded to it before it is normalized, as
// the two stock ops give. One graph node instead of two.
std::pair<mlx::core::array, mlx::core::array> add_rms_norm_fast(
    const mlx::core::array& x, const mlx::core::array& residual,
    const std::optional<mlx::core::array>& weight, float eps, mlx::core::StreamOrDevice s = {});

// Rotary position embedding, as mlx::core::fast::rope (forward): x is
// [B, ..., T, D] (at least 3-D); the first `dims` features rotate, pairs
// (i, i + dims/2) or, when `traditional`, (2i, 2i + 1). Position of row t is
// (t + offset) * scale; offset is a scalar or one per batch entry (int32).
// Exactly one of base and freqs (float [dims/2], periods) is given. Angles
// in float32, cos/sin rounded to x's dtype as the stock op does; the
// rotation is computed in float32 and rounded once.
mlx::core::array rope_fast(const mlx::core::array& x, int dims, bool traditional,
                           std::optional<float> base, float scale, int offset,
                           const std::optional<mlx::core::array>& freqs = std::nullopt,
                           mlx::core::StreamOrDevice s = {});
mlx::core::array rope_fast(const mlx::core::array& x, int dims, bool traditional,
                           std::optional<float> base, float scale, const mlx::core::array& offset,
                           const std::optional<mlx::core::array>& freqs = std::nullopt,
                           mlx::core::StreamOrDevice s = {});

// Attention, as mlx::core::fast::scaled_dot_product_attention:
//   q [B, Hq, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv], Hq % Hkv == 0
//   (grouped-query heads share a KV head).
// `causal` is the stock op's mode "causal": the queries are the last L of
// the S positions, row i sees keys j <= S - L + i (needs S >= L). Otherwise
// an optional mask broadcastable to [B, Hq, L, S]: bool (false = masked,
// scored as -FLT_MAX like the stock op) or additive; not both. As in the
// stock op, a row that a bool mask hides entirely gets the mean of v, and
// one whose additive mask is -inf everywhere gets NaN.
// Scores, softmax and the weighted sum of v in float32; k and v may be
// strided views (a cache's prefix), read in place. Returns [B, Hq, L, Dv]
// in promote_types(q, k, v).
mlx::core::array attention_fast(const mlx::core::array& q, const mlx::core::array& k,
                                const mlx::core::array& v, float scale, bool causal = false,
                                const std::optional<mlx::core::array>& mask = std::nullopt,
                                mlx::core::StreamOrDevice s = {});

// Keys or values stored packed along the head dimension, [B, H, S, ...]:
// MLX's affine form (codes in uint32 words, a scale and a bias per group,
// as mlx::core::quantize makes them) or TurboQuant's (codes in uint32
// words and a float32 norm per group, as turbo_quantize makes them; no
// biases).
enum class KvPacking { affine, turbo };
struct KvPackingFormat {
  KvPacking packing = KvPacking::affine;
  int bits = 8;
  int group_size = 64;
  bool operator==(const KvPackingFormat&) const = default;
};
struct PackedKvRows {
  mlx::core::array codes, scales;  // scales: a TurboQuant group's norm
  std::optional<mlx::core::array> biases;
};

// Attention (as attention_fast, same masks and semantics) over packed keys
// and values [B, Hkv, S, ...], read in place (any strides but the last
// axis's): each block of keys and values becomes float32 as it is scored,
// and no dequantized copy is made. Affine: 2, 4 or 8 bits in groups of 32,
// 64 or 128; the same as dequantizing them to float32 and attending.
// TurboQuant: the scores and the weighted sum are taken in its rotated
// basis (the query rotated in, the output rotated back once), equal to
// attending over turbo_dequantize's rows up to float rounding. Returns
// [B, Hq, L, D] in q's dtype.
mlx::core::array packed_attention_fast(const mlx::core::array& q, const PackedKvRows& k,
                                       const PackedKvRows& v, const KvPackingFormat& format,
                                       float scale, bool causal = false,
                                       const std::optional<mlx::core::array>& mask = std::nullopt,
                                       mlx::core::StreamOrDevice s = {});

// TurboQuant's codec (turbo_codec.h), bit-exact with the reference codec
// in tools/oracle/turboquant_reference.py: x [..., d] (any float dtype,
// taken as float32) → codes uint32 [..., d * bits / 32] and norms float32
// [..., d / group_size]; bits 2, 3, 4 or 8, groups of 32, 64, 128 or 256
// dividing d. CPU only (a GPU stream is refused when evaluated).
std::pair<mlx::core::array, mlx::core::array> turbo_quantize(const mlx::core::array& x, int bits,
                                                             int group_size,
                                                             mlx::core::StreamOrDevice s = {});
// The rows back, float32 [..., d].
mlx::core::array turbo_dequantize(const mlx::core::array& codes, const mlx::core::array& norms,
                                  int bits, int group_size, mlx::core::StreamOrDevice s = {});

// mx::gather_qmm(x, w, scales, biases, rhs_indices = indices, transpose)
// for one row per index: a decode step's chosen experts, x [..., 1, K]
// against w [experts, N, K * bits / 32] → [broadcast(x batch, indices),
// 1, N], reading only the chosen experts' rows. Bit for bit MLX's CPU
// result for bfloat16 at 2, 4 or 8 bits (its scalar arithmetic, each step
// rounded to bfloat16, replayed 16 output rows per AVX-512 vector, 8 per
// AVX2 one); other
// dtypes, widths or shapes and other devices run mx::gather_qmm.
mlx::core::array gather_quantized_matvec_fast(const mlx::core::array& x, const mlx::core::array& w,
                                              const mlx::core::array& scales,
                                              const mlx::core::array& biases,
                                              const mlx::core::array& indices, int group_size,
                                              int bits, mlx::core::StreamOrDevice s = {});

// Gated MLP activation: act(gate) * up with act = silu (x * sigmoid(x)) or
// gelu_approx (tanh approximation, as mlx.nn.gelu_approx). gate and up
// have one shape; output dtype promote_types(gate, up). float32 inside,
// rounded once.
enum class GatedActivation { silu, gelu_approx };
mlx::core::array gated_activation_fast(const mlx::core::array& gate, const mlx::core::array& up,
                                       GatedActivation activation,
                                       mlx::core::StreamOrDevice s = {});

// x @ w.T for x [..., in] and w [out, in] of one float type, in float32:
// - float32 through an optimized BLAS's sgemm (OpenBLAS, opened at run
//   time) where the machine has one;
// - bfloat16 and float16 widened to float32 and the result rounded once:
//   decode-shaped x (one token per sequence, [B, 1, in], or at most
//   qmm::kGemvMaxRows rows) through an own kernel whose every output is the
//   same at any number of rows or threads; larger x through sgemm, a block
//   of weight rows widened at a time.
// Otherwise, and for other dtypes or devices, the stock matmul. Another
// summation order than the stock op's: the fast path's, not bit-exact.
mlx::core::array dense_matmul_fast(const mlx::core::array& x, const mlx::core::array& w,
                                   mlx::core::StreamOrDevice s = {});
// Whether the optimized BLAS was found.
bool dense_matmul_available();
// Whether dense_matmul_fast(x, w) runs its own computation above (otherwise
// it is the stock matmul, and a caller may as well keep its own stock form,
// e.g. addmm).
bool dense_matmul_takes(const mlx::core::array& x, const mlx::core::array& w,
                        mlx::core::StreamOrDevice s = {});

// Low-rank updates of a projection's output (LoRA adapters): with x and y
// seen as rows [N, in] and [N, out] (the last axis against the others),
// each term adds scale · (x_row @ a) @ b to the rows [row_begin, row_end)
// of y, with factors[2·f] = aᵀ [r, in] (a transposed, so x_row @ a is r
// dot products along x) and factors[2·f + 1] = b [r, out], both float32,
// for term f. float32 inside, each row rounded once to y's dtype; a row's
// result depends on that row and its terms only.
struct LowRankTerm {
  int row_begin = 0, row_end = 0;
  int factors = 0;  // which pair
  float scale = 1.0f;
};
mlx::core::array low_rank_update_fast(const mlx::core::array& x, const mlx::core::array& y,
                                      const std::vector<mlx::core::array>& factors,
                                      const std::vector<LowRankTerm>& terms,
                                      mlx::core::StreamOrDevice s = {});

// x - logsumexp(x) along the last axis, as mlx::core::subtract(x,
// mlx::core::logsumexp(x, -1, true)): float32 inside, rounded once to x's
// dtype. A row whose largest value is infinite gives what the stock ops
// give (-inf rows: NaN).
mlx::core::array log_softmax_fast(const mlx::core::array& x, mlx::core::StreamOrDevice s = {});

// Threads the kernels use, including MLX's evaluating thread. count < 1
// means the hardware's core count (the default).
void set_kernel_threads(int count);
int kernel_threads();

}  // namespace mlx_cpp::kernels
