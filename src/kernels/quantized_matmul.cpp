// quantized_matmul_fast: validation, the primitive, and the driver that
// prepares x and spreads columns of the output over the thread pool.
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/eager.h"
#include "kernels/gpu/quantized_matvec.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/qmm_kernels.h"
#include "kernels/thread_pool.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr double kMinDecodeTaskBytes = 64 * 1024;
// Large decode matrices are cut into ranges of about this many bytes (at
// most kMaxDecodeTasks): the thread that finishes first waits for the
// other's last range, so that range should be short. With a few ranges per
// thread, that wait was 6.5% of Qwen2.5-1.5B decode samples.
constexpr double kDecodeTaskBytes = 256 * 1024;
constexpr int kMaxDecodeTasks = 256;

const qmm::IsaKernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return qmm::avx512_kernels();
    case Isa::avx2:
      return qmm::avx2_kernels();
    case Isa::scalar:
      break;
  }
  return qmm::scalar_kernels();
}

// x[M, K] -> float32 in the kernel's k order (pairs of k split into even
// and odd lanes within each chunk of 2 * interleave), plus per-group sums
// where group_sums is not null (the gemv kernels' bias term); with
// round_to_bfloat16, of x rounded to bfloat16.
void prepare_x(const mx::array& x, int M, int K, int group_size, int interleave,
               bool round_to_bfloat16, float* x_float, float* group_sums) {
  std::vector<float> row(K);
  const int groups = K / group_size;
  for (int m = 0; m < M; ++m) {
    qmm::load_as_float(x.data<void>(), scalar_type_of(x.dtype()), static_cast<std::size_t>(m) * K,
                       K, row.data());
    if (round_to_bfloat16) {
      for (float& value : row) value = static_cast<float>(static_cast<mx::bfloat16_t>(value));
    }
    float* dst = x_float + static_cast<std::size_t>(m) * K;
    for (int chunk = 0; chunk < K; chunk += 2 * interleave) {
      for (int i = 0; i < interleave; ++i) {
        dst[chunk + i] = row[chunk + 2 * i];
        dst[chunk + interleave + i] = row[chunk + 2 * i + 1];
      }
    }
    if (group_sums == nullptr) continue;
    for (int g = 0; g < groups; ++g) {
      float sum = 0.0f;
      for (int k = g * group_size; k < (g + 1) * group_size; ++k) sum += row[k];
      group_sums[static_cast<std::size_t>(m) * groups + g] = sum;
    }
  }
}

// The bfloat16 bits of float values that are already bfloat16.
std::uint16_t bfloat16_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<std::uint16_t>(bits >> 16);
}

// Rows of x (natural k order, already rounded to bfloat16) in the layout of
// Problem::x_bf16.
void pack_bfloat16_rows(const std::vector<float>& x_natural, int M, int K, int k_padded,
                        std::uint16_t* dst) {
  for (int m = 0; m < M; ++m) {
    const float* row = x_natural.data() + static_cast<std::size_t>(m) * K;
    std::uint16_t* out = dst + static_cast<std::size_t>(m) * k_padded;
    std::fill(out, out + k_padded, std::uint16_t{0});
    for (int k = 0; k < K; ++k) out[qmm::even_odd_position(k)] = bfloat16_bits(row[k]);
  }
}

// Which kernel a call takes: decode or prefill shape, and the arithmetic
// the ISA offers for what was asked. With weights in the row-interleaved
// layout (4- and 8-bit), `rows` says whether that kernel reads it: the int16
// decode and the half-precision prefill do; the others get the weights in
// MLX's layout (deinterleaved_copy).
struct KernelChoice {
  bool decode = false, int8 = false, bf16 = false, int16 = false, half = false, rows = false;
};

// x as every kernel of one call reads it: float32 (in the float kernels' k
// order), the group sums for the bias term and, for int8 or bfloat16
// decode, the quantized or rounded rows; and the kernel that reads it.
struct PreparedX : KernelChoice {
  std::vector<float> x_float, group_sums;
  std::vector<std::int8_t> xq;
  std::vector<float> xq_scales;
  std::vector<std::uint16_t> x_bf16;
  std::vector<std::int16_t> x_i16;
  std::vector<float> x_i16_scales;
  std::vector<std::uint16_t> x_half;
  std::vector<float> x_half_unscale;
  int M = 0, K = 0, k_padded = 0;
};

// The int16-activation gemv for this weight width, null where the CPU has
// none.
auto int16_kernel(const qmm::IsaKernels& isa, int bits) {
  return bits == 4 ? isa.gemv_int16_q4 : bits == 6 ? isa.gemv_int16_q6 : isa.gemv_int16_q8;
}

KernelChoice choose_kernel(const qmm::IsaKernels& isa, bool decode, int bits,
                           ActivationPrecision precision, PrefillArithmetic prefill,
                           bool row_interleaved) {
  KernelChoice c;
  c.decode = decode;
  // The integer dot products take 4- and 8-bit weights; 6-bit weights keep
  // float activations.
  c.int8 = decode && precision == ActivationPrecision::int8 && isa.gemv_int8 && bits != 6;
  c.bf16 = decode && precision == ActivationPrecision::bfloat16 && bits == 4 && isa.gemv_bf16_q4;
  const bool int16_rows = row_interleaved && isa.gemv_int16_rows;
  c.int16 = decode && precision == ActivationPrecision::int16 &&
            (int16_rows || int16_kernel(isa, bits) != nullptr);
  c.half = !decode && prefill == PrefillArithmetic::half && isa.gemm_half;
  // Float32 prefill reads the interleaved weights where the table has a
  // gemm for them.
  const bool float_rows = !decode && !c.half && isa.gemm_rows;
  c.rows = row_interleaved && ((c.int16 && int16_rows) || c.half || float_rows);
  return c;
}

PreparedX prepare(const mx::array& x, const qmm::IsaKernels& isa, int group_size, int bits,
                  ActivationPrecision precision, PrefillArithmetic prefill, bool row_interleaved) {
  PreparedX p;
  p.K = x.shape(-1);
  p.M = static_cast<int>(x.size() / p.K);
  // The decode kernels take decode-shaped x at any B, in blocks of rows, so
  // each row's result is the one it would get alone.
  static_cast<KernelChoice&>(p) =
      choose_kernel(isa, decode_shaped(x), bits, precision, prefill, row_interleaved);
  const bool round = p.decode && precision == ActivationPrecision::bfloat16;
  // The int8, bfloat16, int16 and half-precision kernels read x in natural
  // order from x_float.
  const int interleave =
      bits == 4 && !p.int8 && !p.bf16 && !p.int16 && !p.half ? isa.interleave : 1;
  p.x_float.resize(static_cast<std::size_t>(p.M) * p.K);
  // The gemv kernels and the exact-code bfloat16 gemm take the bias term
  // from sums of x; the other gemm kernels dequantize the bias into their
  // panels.
  const bool sums = p.decode || p.half;
  if (sums) p.group_sums.resize(static_cast<std::size_t>(p.M) * (p.K / group_size));
  prepare_x(x, p.M, p.K, group_size, interleave, round, p.x_float.data(),
            sums ? p.group_sums.data() : nullptr);
  if (p.bf16) {
    p.k_padded = qmm::even_odd_padded_k(p.K);
    p.x_bf16.resize(static_cast<std::size_t>(p.M) * p.k_padded);
    pack_bfloat16_rows(p.x_float, p.M, p.K, p.k_padded, p.x_bf16.data());
  }
  if (p.half) {
    p.x_half.resize(static_cast<std::size_t>(p.M) * p.K);
    p.x_half_unscale.resize(p.M);
    isa.prepare_x_half(p.x_float.data(), p.M, p.K, p.x_half.data(), p.x_half_unscale.data());
  }
  if (p.int16) {
    p.k_padded = qmm::even_odd_padded_k(p.K);
    p.x_i16.resize(static_cast<std::size_t>(p.M) * p.k_padded);
    p.x_i16_scales.resize(static_cast<std::size_t>(p.M) *
                          qmm::int16_scale_stride(p.k_padded, group_size));
    qmm::quantize_activations_int16(p.x_float.data(), p.M, p.K, group_size, p.k_padded, !p.rows,
                                    p.x_i16.data(), p.x_i16_scales.data());
  }
  if (p.int8) {
    p.k_padded = qmm::int8_padded_k(isa, p.K);
    p.xq.resize(static_cast<std::size_t>(p.M) * p.k_padded);
    p.xq_scales.resize(static_cast<std::size_t>(p.M) * (p.k_padded / 32 + 4));
    qmm::quantize_activations(isa, p.x_float.data(), p.M, p.K, bits, p.xq.data(),
                              p.xq_scales.data());
  }
  return p;
}

// One range of output columns of one weight set.
struct ColumnTask {
  const qmm::Problem* problem;
  Range columns;
};

// Row-interleaved weights {w, scales, biases} in MLX's layout, for the
// kernels that read only that (other precisions, SIMD levels capped below
// the interleaved kernels'): a copy per call, slow but exact.
std::vector<mx::array> deinterleaved_copy(const mx::array& w, const mx::array& scales,
                                          const mx::array& biases, int bits) {
  const int N = w.shape(0), K = w.shape(1) * 8 / bits, groups = scales.shape(1);
  auto packed = eager::allocated_array({N, K * bits / 32}, mx::uint32);
  qmm::deinterleave_rows(bits, w.data<std::uint8_t>(), N, K, packed.data<std::uint8_t>());
  std::vector<mx::array> copy{packed};
  for (const auto* factors : {&scales, &biases}) {
    copy.push_back(eager::allocated_array(factors->shape(), factors->dtype()));
    qmm::deinterleave_factors(factors->data<void>(), factors->itemsize(), N, groups,
                              copy.back().data<void>());
  }
  return copy;
}

// in = {x, then w, scales, biases per weight set}; out[i] = x @ dequant(w_i)^T.
void run_quantized_matmuls(const std::vector<mx::array>& in, std::vector<mx::array>& out,
                           int group_size, int bits, ActivationPrecision precision,
                           PrefillArithmetic prefill, WeightLayout layout) {
  const qmm::IsaKernels& isa = kernels_for(active_isa());
  const bool row_interleaved = layout == WeightLayout::row_interleaved;
  const PreparedX x = prepare(in[0], isa, group_size, bits, precision, prefill, row_interleaved);
  std::vector<mx::array> weights(in.begin() + 1, in.end());
  if (row_interleaved && !x.rows) {
    for (std::size_t i = 0; i < weights.size(); i += 3) {
      auto copy = deinterleaved_copy(weights[i], weights[i + 1], weights[i + 2], bits);
      std::copy(copy.begin(), copy.end(), weights.begin() + i);
    }
  }
  std::vector<qmm::Problem> problems;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto &w = weights[3 * i], &scales = weights[3 * i + 1], &biases = weights[3 * i + 2];
    problems.push_back({x.x_float.data(),
                        x.group_sums.data(),
                        w.data<std::uint8_t>(),
                        scales.data<void>(),
                        biases.data<void>(),
                        scalar_type_of(scales.dtype()),
                        out[i].data<void>(),
                        scalar_type_of(out[i].dtype()),
                        x.M,
                        w.shape(0),
                        x.K,
                        group_size,
                        bits,
                        x.xq.data(),
                        x.xq_scales.data(),
                        x.k_padded,
                        x.x_bf16.data(),
                        x.x_i16.data(),
                        x.x_i16_scales.data(),
                        x.x_half.data(),
                        x.x_half_unscale.data(),
                        x.rows});
  }
  auto kernel = x.int8     ? isa.gemv_int8
                : x.bf16   ? isa.gemv_bf16_q4
                : x.int16  ? (x.rows ? isa.gemv_int16_rows : int16_kernel(isa, bits))
                : x.decode ? isa.gemv
                : x.half   ? isa.gemm_half
                : x.rows   ? isa.gemm_rows
                           : isa.gemm;
  // Decode splits N into at least a few ranges per thread (claimed
  // dynamically, so a busy core does less), ranges of about
  // kDecodeTaskBytes for large matrices, but not below kMinDecodeTaskBytes
  // of weights per range: waking a worker costs about as much as streaming
  // that much.
  // Prefill hands out whole weight panels. The ranges of all weight sets
  // form one job.
  auto& pool = ThreadPool::shared();
  const int align = x.decode ? (x.rows ? 16 : 8)
                    : x.half ? isa.half_column_block
                    : x.rows ? 16
                             : isa.column_block;
  std::vector<ColumnTask> tasks;
  for (const auto& problem : problems) {
    const int units = (problem.N + align - 1) / align;
    int count = std::min(units, pool.thread_count() * (x.decode ? 4 : 8));
    if (x.decode) {
      const double weight_bytes = static_cast<double>(problem.N) * x.K * bits / 8;
      count = std::clamp(static_cast<int>(weight_bytes / kMinDecodeTaskBytes), 1, count);
      count = std::max(count, std::min({units, kMaxDecodeTasks,
                                        static_cast<int>(weight_bytes / kDecodeTaskBytes)}));
      // A whole number of ranges per thread: with 3 ranges on 2 threads,
      // one thread streams two thirds (SmolLM2's o_proj; its q/k/v made 5).
      const int threads = pool.thread_count();
      count = std::min(units, (count + threads - 1) / threads * threads);
    }
    for (int t = 0; t < count; ++t) {
      Range range = split_range(problem.N, count, t, align);
      if (range.begin < range.end) tasks.push_back({&problem, range});
    }
  }
  pool.parallel_for(static_cast<int>(tasks.size()), [&](int t) {
    kernel(*tasks[t].problem, tasks[t].columns.begin, tasks[t].columns.end);
  });
}

class QuantizedMatmulsFast : public FallbackPrimitive {
 public:
  QuantizedMatmulsFast(mx::Stream stream, Fallback fallback, int group_size, int bits,
                       ActivationPrecision precision, PrefillArithmetic prefill,
                       WeightLayout layout)
      : FallbackPrimitive(stream, std::move(fallback)),
        group_size_(group_size),
        bits_(bits),
        precision_(precision),
        prefill_(prefill),
        layout_(layout) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs,
             [group_size = group_size_, bits = bits_, precision = precision_, prefill = prefill_,
              layout = layout_](const Arrays& in, Arrays& out) {
               run_quantized_matmuls(in, out, group_size, bits, precision, prefill, layout);
             });
  }
  const char* name() const override { return "QuantizedMatmulFast"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    std::vector<mx::Shape> shapes;
    for (std::size_t i = 1; i < inputs.size(); i += 3) {
      auto shape = inputs[0].shape();
      shape.back() = inputs[i].shape(0);
      shapes.push_back(std::move(shape));
    }
    return shapes;
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const QuantizedMatmulsFast&>(other);
    return group_size_ == o.group_size_ && bits_ == o.bits_ && precision_ == o.precision_ &&
           prefill_ == o.prefill_ && layout_ == o.layout_;
  }

 private:
  int group_size_;
  int bits_;
  ActivationPrecision precision_;
  PrefillArithmetic prefill_;
  WeightLayout layout_;
};

[[noreturn]] void reject(const std::string& message) {
  kernels::reject("quantized_matmul_fast", message);
}

// The stock-op composition for row-interleaved weights (w uint8 [N, K x
// bits / 8], scales and biases [N / 16][groups][16]): the weights put back
// in [N, K] order and dequantized, then x @ w^T.
mx::array stock_row_interleaved_matmul(const mx::array& x, const mx::array& w,
                                       const mx::array& scales, const mx::array& biases,
                                       int group_size, int bits, mx::StreamOrDevice s) {
  const int N = w.shape(0), K = w.shape(1) * 8 / bits, groups = K / group_size;
  mx::array q = w;
  if (bits == 4) {
    // Byte (block, unit, row, j) holds k = 4 unit + j (low) and 4 unit + 2 + j.
    auto bytes = mx::reshape(w, {N / 16, K / 4, 16, 2}, s);
    auto low = mx::bitwise_and(bytes, mx::array(0x0F, mx::uint8), s);
    auto high = mx::right_shift(bytes, mx::array(4, mx::uint8), s);
    q = mx::transpose(mx::stack({low, high}, 3, s), {0, 2, 1, 3, 4}, s);  // [N/16, 16, K/4, 2, 2]
  } else if (bits == 6) {
    // Bytes (block, unit, row, 0..2) are MLX's 24 bits of k = 4 unit + 0..3.
    auto bytes = mx::astype(mx::reshape(w, {N / 16, K / 4, 16, 3}, s), mx::uint32, s);
    auto byte = [&](int i) {
      return mx::slice(bytes, {0, 0, 0, i}, {N / 16, K / 4, 16, i + 1}, s);
    };
    auto run =
        mx::bitwise_or(byte(0),
                       mx::bitwise_or(mx::left_shift(byte(1), mx::array(8u, mx::uint32), s),
                                      mx::left_shift(byte(2), mx::array(16u, mx::uint32), s), s),
                       s);
    auto codes = mx::bitwise_and(mx::right_shift(run, mx::array({0u, 6u, 12u, 18u}, mx::uint32), s),
                                 mx::array(0x3Fu, mx::uint32), s);  // [N/16, K/4, 16, 4]
    q = mx::transpose(codes, {0, 2, 1, 3}, s);                      // [N/16, 16, K/4, 4]
  } else {
    // Bytes (block, unit, row, 0..3) hold k = 4 unit + 0, 2, 1, 3.
    auto bytes = mx::reshape(w, {N / 16, K / 4, 16, 4}, s);
    auto natural = mx::take(bytes, mx::array({0, 2, 1, 3}), 3, s);
    q = mx::transpose(natural, {0, 2, 1, 3}, s);  // [N/16, 16, K/4, 4]
  }
  auto in_rows = [&](const mx::array& factors) {  // [N / 16][groups][16] -> [N, groups, 1]
    auto rows = mx::transpose(mx::reshape(factors, {N / 16, groups, 16}, s), {0, 2, 1}, s);
    return mx::reshape(rows, {N, groups, 1}, s);
  };
  auto grouped = mx::reshape(mx::astype(q, scales.dtype(), s), {N, groups, group_size}, s);
  auto dense = mx::reshape(mx::add(mx::multiply(grouped, in_rows(scales), s), in_rows(biases), s),
                           {N, K}, s);
  return mx::matmul(x, mx::transpose(dense, s), s);
}

void validate(const mx::array& x, const QuantizedWeights& weights, int group_size, int bits) {
  const auto &w = weights.w, &scales = weights.scales, &biases = weights.biases;
  std::ostringstream msg;
  if (bits != 4 && bits != 6 && bits != 8) {
    reject("bits is " + std::to_string(bits) + ", expected 4, 6 or 8");
  }
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    reject("group_size is " + std::to_string(group_size) + ", expected 32, 64 or 128");
  }
  if (!is_float_dtype(x.dtype()) || x.ndim() < 1)
    reject("x must be float32/bfloat16/float16 [..., K]");
  const bool rows = weights.layout == WeightLayout::row_interleaved;
  if (rows && (w.dtype() != mx::uint8 || w.ndim() != 2 || w.shape(0) % 16 != 0))
    reject(
        "row-interleaved weights must be a 2-D uint8 array [N, K x bits / 8], N a multiple of "
        "16");
  if (!rows && (w.dtype() != mx::uint32 || w.ndim() != 2))
    reject("w must be a 2-D uint32 array [N, K * bits / 32]");
  if (!is_float_dtype(scales.dtype()) || biases.dtype() != scales.dtype()) {
    reject("scales and biases must share one float dtype");
  }
  const int K = x.shape(-1);
  const int N = w.shape(0);
  const int element_bits = rows ? 8 : 32;
  if (w.shape(1) * element_bits / bits != K) {
    msg << "w has " << w.shape(1) << " packed columns (K = " << w.shape(1) * element_bits / bits
        << " at " << bits << " bits), x has K = " << K;
    reject(msg.str());
  }
  if (K % group_size != 0) reject("K = " + std::to_string(K) + " is not a multiple of group_size");
  mx::Shape expected{N, K / group_size};
  if (scales.shape() != expected || biases.shape() != expected) {
    msg << "scales/biases have shapes " << scales.shape() << "/" << biases.shape() << ", expected "
        << expected;
    reject(msg.str());
  }
}

}  // namespace

std::vector<mx::array> quantized_matmuls_fast(const mx::array& x,
                                              const std::vector<QuantizedWeights>& weights,
                                              int group_size, int bits,
                                              ActivationPrecision precision,
                                              PrefillArithmetic prefill, mx::StreamOrDevice s) {
  if (weights.empty()) reject("no weights given");
  const WeightLayout layout = weights.front().layout;
  std::vector<mx::array> inputs{x};
  std::vector<mx::Shape> shapes;
  std::vector<mx::Dtype> dtypes;
  for (const auto& q : weights) {
    validate(x, q, group_size, bits);
    if (q.layout != layout) reject("the weights of one call must share one layout");
    inputs.insert(inputs.end(), {q.w, q.scales, q.biases});
    auto shape = x.shape();
    shape.back() = q.w.shape(0);
    shapes.push_back(std::move(shape));
    dtypes.push_back(mx::promote_types(x.dtype(), q.scales.dtype()));
  }
  auto fallback = [group_size, bits, layout, s](const std::vector<mx::array>& in) {
    std::vector<mx::array> outputs;
    for (std::size_t i = 1; i < in.size(); i += 3) {
      if (layout == WeightLayout::row_interleaved) {
        outputs.push_back(
            stock_row_interleaved_matmul(in[0], in[i], in[i + 1], in[i + 2], group_size, bits, s));
        continue;
      }
      outputs.push_back(mx::quantized_matmul(in[0], in[i], in[i + 1], in[i + 2], true, group_size,
                                             bits, "affine", s));
    }
    return outputs;
  };
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) {
    // On the GPU: the own matrix-vector kernel for decode-shaped calls on
    // MLX's layout, MLX's kernels for everything else.
    const bool own =
        layout == WeightLayout::mlx &&
        std::all_of(weights.begin(), weights.end(), [&](const QuantizedWeights& q) {
          return gpu::quantized_matvec_covers(x, q.w, q.scales, group_size, bits, stream);
        });
    if (!own) return fallback(inputs);
    return gpu::quantized_matvecs(x, weights, group_size, bits, stream);
  }
  return mx::array::make_arrays(std::move(shapes), dtypes,
                                std::make_shared<QuantizedMatmulsFast>(
                                    stream, fallback, group_size, bits, precision, prefill, layout),
                                inputs);
}

mx::array quantized_matmul_fast(const mx::array& x, const mx::array& w, const mx::array& scales,
                                const mx::array& biases, int group_size, int bits,
                                ActivationPrecision precision, PrefillArithmetic prefill,
                                mx::StreamOrDevice s) {
  return quantized_matmuls_fast(x, {{w, scales, biases}}, group_size, bits, precision, prefill,
                                s)[0];
}

void eager::quantized_matmuls(const mx::array& x, const std::vector<QuantizedWeights>& weights,
                              int group_size, int bits, ActivationPrecision precision,
                              PrefillArithmetic prefill, std::vector<mx::array>& out) {
  std::vector<mx::array> in{x};
  for (const auto& q : weights) in.insert(in.end(), {q.w, q.scales, q.biases});
  run_quantized_matmuls(in, out, group_size, bits, precision, prefill, weights.front().layout);
}

std::string quantized_matmul_variant(int bits, bool decode, ActivationPrecision precision,
                                     PrefillArithmetic prefill) {
  const qmm::IsaKernels& isa = kernels_for(active_isa());
  const bool rows = row_interleaving_pays(bits, 16);
  const KernelChoice c = choose_kernel(isa, decode, bits, precision, prefill, rows);
  std::string arithmetic = c.int8    ? "int8"
                           : c.bf16  ? "bfloat16"
                           : c.int16 ? "int16"
                           : c.half  ? isa.half_name
                                     : "float32";
  std::string name = arithmetic + " " + (decode ? "gemv" : "gemm") + " " + isa.name;
  if (c.rows) name += " row-interleaved";
  return name;
}

bool row_interleaving_pays(int bits, int rows) {
  const qmm::IsaKernels& isa = kernels_for(active_isa());
  return (bits == 4 || bits == 6 || bits == 8) && rows % 16 == 0 && isa.gemv_int16_rows &&
         (isa.gemm_half || isa.gemm_rows);
}

QuantizedWeights to_row_interleaved(const QuantizedWeights& weights, int group_size, int bits) {
  if ((bits != 4 && bits != 6 && bits != 8) || weights.layout != WeightLayout::mlx ||
      weights.w.shape(0) % 16 != 0)
    reject(
        "to_row_interleaved takes 4-, 6- or 8-bit weights in MLX's layout with a multiple of 16 "
        "rows");
  mx::eval({weights.w, weights.scales, weights.biases});
  const int N = weights.w.shape(0), K = weights.w.shape(1) * 32 / bits, groups = K / group_size;
  const std::size_t row_bytes = static_cast<std::size_t>(K) * bits / 8;
  auto w = eager::allocated_array({N, static_cast<int>(row_bytes)}, mx::uint8);
  std::vector<mx::array> factors;
  for (const auto* source : {&weights.scales, &weights.biases})
    factors.push_back(eager::allocated_array(source->shape(), source->dtype()));
  // Blocks of 16 rows are contiguous in both layouts: ranges of them
  // convert independently (a 1.5B model's weights take about a second on
  // one core).
  parallel_ranges(N / 16, 64, [&](Range blocks) {
    const int first = blocks.begin * 16, rows = (blocks.end - blocks.begin) * 16;
    qmm::interleave_rows(bits, weights.w.data<std::uint8_t>() + first * row_bytes, rows, K,
                         w.data<std::uint8_t>() + first * row_bytes);
    for (int i = 0; i < 2; ++i) {
      const auto& source = i == 0 ? weights.scales : weights.biases;
      const std::size_t offset = static_cast<std::size_t>(first) * groups * source.itemsize();
      qmm::interleave_factors(source.data<std::uint8_t>() + offset, source.itemsize(), rows, groups,
                              factors[i].data<std::uint8_t>() + offset);
    }
  });
  return {w, factors[0], factors[1], WeightLayout::row_interleaved};
}

void set_kernel_threads(int count) {
  ThreadPool::shared().set_thread_count(count);
}

int kernel_threads() {
  return ThreadPool::shared().thread_count();
}

}  // namespace mlx_cpp::kernels
