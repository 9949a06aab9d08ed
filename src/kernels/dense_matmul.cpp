// dense_matmul_fast: x @ w.T for float weights, through OpenBLAS's sgemm.
//
// MLX's CPU wheel carries the reference BLAS, whose sgemm is unblocked: a
// 300M-parameter float32 encoder ran at about 16 tokens/s on two cores, and
// MLX's half-precision matmul is no faster (a bfloat16 135M model prefilled
// about 20 tokens/s). OpenBLAS (Debian's libopenblas0) is the library made
// for this. The stock path must keep MLX's own matmul (bit-exactness with
// mlx-lm depends on its summation order), so OpenBLAS is opened privately
// (RTLD_LOCAL) and called through the pointers it gives: it never takes the
// place of MLX's symbols. Without it the op is the stock matmul.
//
// Half-precision operands (bfloat16, float16) are widened to float32 and
// multiplied in float32, the result rounded once to the operands' type (the
// stock op is no faster than the reference BLAS for them: a bfloat16 135M
// model decoded 6 tokens/s). Prefill-shaped calls widen a block of weight
// rows at a time for sgemm. Decode-shaped calls (one token per sequence, or
// a few rows) take an own kernel instead: each block of 16 weight rows is
// widened in registers and dotted with every row of x, in an order that
// depends on neither the number of rows nor the threads, so a sequence's
// logits are the same alone, in a batch, or verifying drafts.
#include <dlfcn.h>
#include <mlx/ops.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_ops.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "dense_matmul_fast";
// Weight rows a decode-shaped half-precision call takes at once (they stay
// in the core's cache while every row of x meets them).
constexpr int kBlockRows = 16;
// Weight elements widened per sgemm call (16 MiB of float32): large enough
// for OpenBLAS to block well, small enough not to double a layer's memory.
constexpr std::size_t kWidenedElements = std::size_t{1} << 22;

// CBLAS's enum values (cblas.h), to declare no header of a library that is
// only opened at run time.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                       float, float*, int);
using SetThreads = void (*)(int);

Sgemm open_sgemm() {
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    void* library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) continue;
    auto sgemm = reinterpret_cast<Sgemm>(::dlsym(library, "cblas_sgemm"));
    if (sgemm == nullptr) continue;
    // As many threads as the own kernels use (--threads).
    if (auto set = reinterpret_cast<SetThreads>(::dlsym(library, "openblas_set_num_threads")))
      set(ThreadPool::shared().thread_count());
    return sgemm;
  }
  return nullptr;
}

Sgemm sgemm() {
  static std::once_flag once;
  static Sgemm function = nullptr;
  std::call_once(once, [] { function = open_sgemm(); });
  return function;
}

// y = x @ w.T for half-precision x [m, k], w [n, k] and y [m, n], m small:
// each block of kBlockRows weight rows, widened in registers, dotted with
// every row of x while it is in the core's cache.
void multiply_rows(const mx::array& x, const mx::array& w, mx::array& y, int m, int n, int k) {
  const auto& ops = vector_ops();
  const auto type = scalar_type_of(x.dtype());
  const auto rows_of = [k](int count) { return static_cast<std::size_t>(count) * k; };
  std::vector<float> xs(rows_of(m));
  for (int r = 0; r < m; ++r) ops.load(x.data<void>(), type, rows_of(r), k, xs.data() + rows_of(r));
  const auto* weights = static_cast<const std::uint16_t*>(w.data<void>());
  const int blocks = (n + kBlockRows - 1) / kBlockRows;
  // Tasks of whole blocks: about 128 KiB of weights each.
  const int min_blocks = std::max(1, (1 << 16) / (kBlockRows * k));
  parallel_ranges(blocks, min_blocks, [&](Range range) {
    float dots[kBlockRows];
    for (int block = range.begin; block < range.end; ++block) {
      const int begin = block * kBlockRows, rows = std::min(kBlockRows, n - begin);
      // The next block's rows are fetched while this one is dotted: 16
      // short row streams start too often for the hardware prefetcher
      // (decode of a 135M model: about 7% faster, docs/benchmarks.md).
      if (block + 1 < range.end) {
        const auto* next = reinterpret_cast<const char*>(weights + rows_of(begin + kBlockRows));
        const std::size_t bytes = rows_of(std::min(kBlockRows, n - begin - kBlockRows)) * 2;
        for (std::size_t offset = 0; offset < bytes; offset += 64)
          __builtin_prefetch(next + offset);
      }
      for (int r = 0; r < m; ++r) {
        ops.dot_rows_half(xs.data() + rows_of(r), weights + rows_of(begin), type, k, k, rows, dots);
        ops.store(dots, rows, y.data<void>(), type, static_cast<std::size_t>(r) * n + begin);
      }
    }
  });
}

// y = x @ w.T for half-precision x [m, k], w [n, k] and y [m, n]: x widened
// once, w a block of rows at a time, y rounded from float32 at the end.
void multiply_widened(const mx::array& x, const mx::array& w, mx::array& y, int m, int n, int k) {
  const auto& ops = vector_ops();
  const auto type = scalar_type_of(x.dtype());
  const auto rows_of = [k](int count) { return static_cast<std::size_t>(count) * k; };
  std::vector<float> xs(rows_of(m)), ys(static_cast<std::size_t>(m) * n);
  parallel_ranges(m, 1, [&](Range r) {
    ops.load(x.data<void>(), type, rows_of(r.begin), static_cast<int>(rows_of(r.end - r.begin)),
             xs.data() + rows_of(r.begin));
  });
  // At least 16 rows a call, at most the whole of w (fewer than 16 rows when
  // w has fewer).
  const int block =
      static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(kWidenedElements / k, 16), n));
  std::vector<float> ws(rows_of(block));
  for (int begin = 0; begin < n; begin += block) {
    const int rows = std::min(block, n - begin);
    parallel_ranges(rows, 1, [&](Range r) {
      ops.load(w.data<void>(), type, rows_of(begin + r.begin),
               static_cast<int>(rows_of(r.end - r.begin)), ws.data() + rows_of(r.begin));
    });
    sgemm()(kRowMajor, kNoTrans, kTrans, m, rows, k, 1.0f, xs.data(), k, ws.data(), k, 0.0f,
            ys.data() + begin, n);
  }
  parallel_ranges(m, 1, [&](Range r) {
    const std::size_t offset = static_cast<std::size_t>(r.begin) * n;
    ops.store(ys.data() + offset, (r.end - r.begin) * n, y.data<void>(), type, offset);
  });
}

class DenseMatmulFast : public FallbackPrimitive {
 public:
  using FallbackPrimitive::FallbackPrimitive;

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [](const Arrays& in, Arrays& out) {
      const int k = in[1].shape(1), n = in[1].shape(0);
      const int m = static_cast<int>(in[0].size() / k);
      if (in[0].dtype() == mx::float32) {
        sgemm()(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, in[0].data<float>(), k,
                in[1].data<float>(), k, 0.0f, out[0].data<float>(), n);
        return;
      }
      if (decode_shaped(in[0]) || !dense_matmul_available())
        multiply_rows(in[0], in[1], out[0], m, n, k);
      else
        multiply_widened(in[0], in[1], out[0], m, n, k);
    });
  }
  const char* name() const override { return "DenseMatmulFast"; }
  bool is_equivalent(const mx::Primitive&) const override { return true; }
  std::vector<mx::Shape> output_shapes(const Arrays& inputs) override {
    auto shape = inputs[0].shape();
    shape.back() = inputs[1].shape(0);
    return {shape};
  }
};

}  // namespace

bool dense_matmul_available() {
  return sgemm() != nullptr;
}

bool dense_matmul_takes(const mx::array& x, const mx::array& w, mx::StreamOrDevice s) {
  const auto dtype = x.dtype();
  const bool half = dtype == mx::bfloat16 || dtype == mx::float16;
  if (mx::to_stream(s).device != mx::Device::cpu || (dtype != mx::float32 && !half) ||
      w.dtype() != dtype || w.ndim() != 2 || x.ndim() < 1 || x.shape(-1) != w.shape(1) ||
      x.size() == 0)
    return false;
  // Half precision has the own kernel at every shape; float32 only sgemm.
  return half || dense_matmul_available();
}

mx::array dense_matmul_fast(const mx::array& x, const mx::array& w, mx::StreamOrDevice s) {
  if (w.ndim() != 2 || x.ndim() < 1 || x.shape(-1) != w.shape(1)) {
    std::ostringstream msg;
    msg << "x " << x.shape() << " does not multiply w.T for w " << w.shape();
    reject(kOp, msg.str());
  }
  auto fallback = [s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::matmul(in[0], mx::transpose(in[1], s), s)};
  };
  if (!dense_matmul_takes(x, w, s)) return fallback({x, w})[0];
  auto shape = x.shape();
  shape.back() = w.shape(0);
  return mx::array(shape, x.dtype(), std::make_shared<DenseMatmulFast>(mx::to_stream(s), fallback),
                   {x, w});
}

}  // namespace mlx_cpp::kernels
