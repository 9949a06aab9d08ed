// dense_matmul_fast: x @ w.T for float32 weights, through OpenBLAS's sgemm.
//
// MLX's CPU wheel carries the reference BLAS, whose sgemm is unblocked: a
// 300M-parameter float32 encoder ran at about 16 tokens/s on two cores.
// OpenBLAS (Debian's libopenblas0) is the library made for this. The stock
// path must keep MLX's own sgemm (bit-exactness with mlx-lm depends on its
// summation order), so OpenBLAS is opened privately (RTLD_LOCAL) and called
// through the pointers it gives: it never takes the place of MLX's symbols.
// Without it the op is the stock matmul.
#include <dlfcn.h>
#include <mlx/ops.h>

#include <mutex>
#include <sstream>

#include "kernels/kernels.h"
#include "kernels/primitive_base.h"
#include "kernels/thread_pool.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

constexpr const char* kOp = "dense_matmul_fast";

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

class DenseMatmulFast : public FallbackPrimitive {
 public:
  using FallbackPrimitive::FallbackPrimitive;

  void eval_cpu(const Arrays& inputs, Arrays& outputs) override {
    dispatch(inputs, outputs, [](const Arrays& in, Arrays& out) {
      const int k = in[1].shape(1), n = in[1].shape(0);
      const int m = static_cast<int>(in[0].size() / k);
      sgemm()(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, in[0].data<float>(), k,
              in[1].data<float>(), k, 0.0f, out[0].data<float>(), n);
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

mx::array dense_matmul_fast(const mx::array& x, const mx::array& w, mx::StreamOrDevice s) {
  if (w.ndim() != 2 || x.ndim() < 1 || x.shape(-1) != w.shape(1)) {
    std::ostringstream msg;
    msg << "x " << x.shape() << " does not multiply w.T for w " << w.shape();
    reject(kOp, msg.str());
  }
  auto fallback = [s](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::matmul(in[0], mx::transpose(in[1], s), s)};
  };
  auto stream = mx::to_stream(s);
  if (stream.device != mx::Device::cpu || x.dtype() != mx::float32 || w.dtype() != mx::float32 ||
      x.size() == 0 || !dense_matmul_available())
    return fallback({x, w})[0];
  auto shape = x.shape();
  shape.back() = w.shape(0);
  return mx::array(shape, mx::float32, std::make_shared<DenseMatmulFast>(stream, fallback), {x, w});
}

}  // namespace mlx_cpp::kernels
