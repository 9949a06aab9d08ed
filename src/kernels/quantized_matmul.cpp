// quantized_matmul_fast: validation, the primitive, and the driver that
// prepares x and spreads columns of the output over the thread pool.
#include <mlx/ops.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/qmm_kernels.h"
#include "kernels/thread_pool.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

// Up to this many rows the weights are streamed once per call (decode);
// above it they are dequantized into panels reused by all rows (prefill).
constexpr int kGemvMaxRows = 4;
constexpr double kMinDecodeTaskBytes = 64 * 1024;

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
// and odd lanes within each chunk of 2 * interleave), plus per-group sums.
void prepare_x(const mx::array& x, int M, int K, int group_size, int interleave, float* x_float,
               float* group_sums) {
  std::vector<float> row(K);
  const int groups = K / group_size;
  for (int m = 0; m < M; ++m) {
    qmm::load_as_float(x.data<void>(), scalar_type_of(x.dtype()), static_cast<std::size_t>(m) * K,
                       K, row.data());
    float* dst = x_float + static_cast<std::size_t>(m) * K;
    for (int chunk = 0; chunk < K; chunk += 2 * interleave) {
      for (int i = 0; i < interleave; ++i) {
        dst[chunk + i] = row[chunk + 2 * i];
        dst[chunk + interleave + i] = row[chunk + 2 * i + 1];
      }
    }
    for (int g = 0; g < groups; ++g) {
      float sum = 0.0f;
      for (int k = g * group_size; k < (g + 1) * group_size; ++k) sum += row[k];
      group_sums[static_cast<std::size_t>(m) * groups + g] = sum;
    }
  }
}

void run_quantized_matmul(const mx::array& x, const mx::array& w, const mx::array& scales,
                          const mx::array& biases, mx::array& out, int group_size, int bits,
                          ActivationPrecision precision) {
  const int K = x.shape(-1);
  const int M = static_cast<int>(x.size() / K);
  const int N = w.shape(0);
  const qmm::IsaKernels& isa = kernels_for(active_isa());
  const bool decode = M <= kGemvMaxRows;
  const bool int8 = decode && precision == ActivationPrecision::int8 && isa.gemv_int8;
  const int interleave = bits == 4 && !int8 ? isa.interleave : 1;
  std::vector<float> x_float(static_cast<std::size_t>(M) * K);
  std::vector<float> group_sums(static_cast<std::size_t>(M) * (K / group_size));
  prepare_x(x, M, K, group_size, interleave, x_float.data(), group_sums.data());
  std::vector<std::int8_t> xq;
  std::vector<float> xq_scales;
  const int k_padded = int8 ? qmm::int8_padded_k(isa, K) : 0;
  if (int8) {
    xq.resize(static_cast<std::size_t>(M) * k_padded);
    xq_scales.resize(static_cast<std::size_t>(M) * (k_padded / 32 + 4));
    qmm::quantize_activations(isa, x_float.data(), M, K, bits, xq.data(), xq_scales.data());
  }

  qmm::Problem problem{x_float.data(),
                       group_sums.data(),
                       w.data<std::uint8_t>(),
                       scales.data<void>(),
                       biases.data<void>(),
                       scalar_type_of(scales.dtype()),
                       out.data<void>(),
                       scalar_type_of(out.dtype()),
                       M,
                       N,
                       K,
                       group_size,
                       bits,
                       xq.data(),
                       xq_scales.data(),
                       k_padded};
  auto kernel = int8 ? isa.gemv_int8 : decode ? isa.gemv : isa.gemm;
  // Decode splits N into a few ranges per thread (claimed dynamically, so a
  // busy core does less), but not below kMinDecodeTaskBytes of weights per
  // range: waking a worker costs about as much as streaming that much.
  // Prefill hands out whole weight panels.
  auto& pool = ThreadPool::shared();
  const int align = decode ? 8 : isa.column_block;
  const int units = (N + align - 1) / align;
  int tasks = std::min(units, pool.thread_count() * (decode ? 4 : 8));
  if (decode) {
    const double weight_bytes = static_cast<double>(N) * K * bits / 8 * M;
    tasks = std::clamp(static_cast<int>(weight_bytes / kMinDecodeTaskBytes), 1, tasks);
  }
  pool.parallel_for(tasks, [&](int task) {
    Range range = split_range(N, tasks, task, align);
    if (range.begin < range.end) kernel(problem, range.begin, range.end);
  });
}

class QuantizedMatmulFast : public FallbackPrimitive {
 public:
  QuantizedMatmulFast(mx::Stream stream, Fallback fallback, int group_size, int bits,
                      ActivationPrecision precision)
      : FallbackPrimitive(stream, std::move(fallback)),
        group_size_(group_size),
        bits_(bits),
        precision_(precision) {}

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs,
             [group_size = group_size_, bits = bits_, precision = precision_](const Arrays& in,
                                                                              Arrays& out) {
               run_quantized_matmul(in[0], in[1], in[2], in[3], out[0], group_size, bits,
                                    precision);
             });
  }
  const char* name() const override { return "QuantizedMatmulFast"; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    auto shape = inputs[0].shape();
    shape.back() = inputs[1].shape(0);
    return {shape};
  }
  bool is_equivalent(const mx::Primitive& other) const override {
    auto& o = static_cast<const QuantizedMatmulFast&>(other);
    return group_size_ == o.group_size_ && bits_ == o.bits_ && precision_ == o.precision_;
  }

 private:
  int group_size_;
  int bits_;
  ActivationPrecision precision_;
};

[[noreturn]] void reject(const std::string& message) {
  kernels::reject("quantized_matmul_fast", message);
}

void validate(const mx::array& x, const mx::array& w, const mx::array& scales,
              const mx::array& biases, int group_size, int bits) {
  std::ostringstream msg;
  if (bits != 4 && bits != 8) reject("bits is " + std::to_string(bits) + ", expected 4 or 8");
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    reject("group_size is " + std::to_string(group_size) + ", expected 32, 64 or 128");
  }
  if (!is_float_dtype(x.dtype()) || x.ndim() < 1)
    reject("x must be float32/bfloat16/float16 [..., K]");
  if (w.dtype() != mx::uint32 || w.ndim() != 2)
    reject("w must be a 2-D uint32 array [N, K * bits / 32]");
  if (!is_float_dtype(scales.dtype()) || biases.dtype() != scales.dtype()) {
    reject("scales and biases must share one float dtype");
  }
  const int K = x.shape(-1);
  const int N = w.shape(0);
  if (w.shape(1) * 32 / bits != K) {
    msg << "w has " << w.shape(1) << " packed columns (K = " << w.shape(1) * 32 / bits << " at "
        << bits << " bits), x has K = " << K;
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

mx::array quantized_matmul_fast(const mx::array& x, const mx::array& w, const mx::array& scales,
                                const mx::array& biases, int group_size, int bits,
                                ActivationPrecision precision, mx::StreamOrDevice s) {
  validate(x, w, scales, biases, group_size, bits);
  auto fallback = [group_size, bits, s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{
        mx::quantized_matmul(in[0], in[1], in[2], in[3], true, group_size, bits, "affine", s)};
  };
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu) return fallback({x, w, scales, biases})[0];
  auto out_shape = x.shape();
  out_shape.back() = w.shape(0);
  auto dtype = mx::promote_types(x.dtype(), scales.dtype());
  return mx::array(std::move(out_shape), dtype,
                   std::make_shared<QuantizedMatmulFast>(stream, fallback, group_size, bits, precision),
                   {x, w, scales, biases});
}

void set_kernel_threads(int count) {
  ThreadPool::shared().set_thread_count(count);
}

int kernel_threads() {
  return ThreadPool::shared().thread_count();
}

}  // namespace mlx_cpp::kernels
