#include "kernels/primitive_base.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/eager.h"

namespace mlx_cpp::kernels {

namespace mx = mlx::core;

namespace {

// Copies the elements of `src` (any strides, in elements) under `dim` into
// `dst`, row-major; rows whose last stride is 1 move with memcpy.
void copy_strided(const mx::array& src, const char* from, char*& to, int dim) {
  const auto item = static_cast<std::int64_t>(src.itemsize());
  const int last = static_cast<int>(src.ndim()) - 1;
  const std::int64_t extent = src.shape(dim);
  const std::int64_t stride = static_cast<std::int64_t>(src.strides()[dim]) * item;
  if (dim == last && stride == item) {
    std::memcpy(to, from, extent * item);
    to += extent * item;
    return;
  }
  for (int i = 0; i < extent; ++i, from += stride) {
    if (dim == last) {
      std::memcpy(to, from, item);
      to += item;
    } else {
      copy_strided(src, from, to, dim + 1);
    }
  }
}

mx::array row_contiguous_copy(const mx::array& src) {
  mx::array copy(mx::allocator::malloc(src.nbytes()), src.shape(), src.dtype());
  eager::copy(src, copy);
  return copy;
}

}  // namespace

void eager::copy(const mx::array& src, mx::array& dst) {
  if (src.ndim() == 0 || src.size() == 0) {
    std::memcpy(dst.data<char>(), src.data<char>(), src.nbytes());
    return;
  }
  char* to = dst.data<char>();
  copy_strided(src, src.data<char>(), to, 0);
}

void FallbackPrimitive::eval_gpu(const Arrays&, Arrays&) {
  throw std::runtime_error(std::string("[") + name() + "] has no GPU kernel; use the fallback");
}

FallbackPrimitive::Arrays FallbackPrimitive::jvp(const Arrays& primals, const Arrays& tangents,
                                                 const std::vector<int>& argnums) {
  // Tangents arrive only for `argnums`; the others are zero.
  Arrays all_tangents;
  for (const auto& primal : primals) all_tangents.push_back(mx::zeros_like(primal));
  for (std::size_t i = 0; i < argnums.size(); ++i) all_tangents[argnums[i]] = tangents[i];
  return mx::jvp(fallback_, primals, all_tangents).second;
}

FallbackPrimitive::Arrays FallbackPrimitive::vjp(const Arrays& primals, const Arrays& cotangents,
                                                 const std::vector<int>& argnums, const Arrays&) {
  auto all_vjps = mx::vjp(fallback_, primals, cotangents).second;
  Arrays selected;
  for (int index : argnums) selected.push_back(all_vjps[index]);
  return selected;
}

void FallbackPrimitive::dispatch(const Arrays& inputs, Arrays& outputs,
                                 std::function<void(const Arrays&, Arrays&)> compute,
                                 std::size_t row_contiguous_inputs) {
  auto& encoder = mx::cpu::get_command_encoder(stream());
  Arrays input_views;
  Arrays output_views;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& input = inputs[i];
    encoder.set_input_array(input);
    input_views.push_back(mx::array::unsafe_weak_copy(input));
  }
  // Strided inputs are copied in the task, not by a Contiguous node in the
  // graph: whether an input is row-contiguous is known only once it is
  // evaluated, and most are, so a node per input would cost a graph step
  // (several microseconds of scheduling) for nothing.
  const std::size_t check = std::min(row_contiguous_inputs, inputs.size());
  for (auto& output : outputs) {
    output.set_data(mx::allocator::malloc(output.nbytes()));
    encoder.set_output_array(output);
    output_views.push_back(mx::array::unsafe_weak_copy(output));
  }
  encoder.dispatch([inputs = std::move(input_views), outputs = std::move(output_views),
                    compute = std::move(compute), check]() mutable {
    for (std::size_t i = 0; i < check; ++i) {
      if (!inputs[i].flags().row_contiguous) inputs[i] = row_contiguous_copy(inputs[i]);
    }
    compute(inputs, outputs);
  });
}

qmm::ScalarType scalar_type_of(mx::Dtype dtype) {
  if (dtype == mx::bfloat16) return qmm::ScalarType::bfloat16;
  if (dtype == mx::float16) return qmm::ScalarType::float16;
  return qmm::ScalarType::float32;
}

bool decode_shaped(const mx::array& x) {
  const bool one_token_rows = x.ndim() >= 3 && x.shape(-2) == 1;
  return one_token_rows || x.size() / x.shape(-1) <= static_cast<std::size_t>(qmm::kGemvMaxRows);
}

void reject(const char* op, const std::string& message) {
  throw std::invalid_argument(std::string("[") + op + "] " + message);
}

bool is_float_dtype(mx::Dtype dtype) {
  return dtype == mx::float32 || dtype == mx::bfloat16 || dtype == mx::float16;
}

}  // namespace mlx_cpp::kernels
