#include "model/depthwise_conv_weight.h"

#include <mlx/ops.h>

#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

mx::array load_depthwise_conv_weight(WeightStore& weights, const std::string& name, int channels,
                                     int kernel) {
  const auto* stored = weights.find(name);
  const bool transposed = stored && stored->ndim() == 3 && stored->shape(1) == 1 &&
                          stored->shape(2) == kernel && kernel > 1;
  auto weight = weights.take(
      name, transposed ? mx::Shape{channels, 1, kernel} : mx::Shape{channels, kernel, 1});
  return transposed ? mx::transpose(weight, {0, 2, 1}) : weight;
}

}  // namespace mlx_cpp
