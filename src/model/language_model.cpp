#include "model/language_model.h"

#include "io/error.h"

namespace mlx_cpp {

mlx::core::array LanguageModel::training_forward(const mlx::core::array& tokens,
                                                 const AdapterStack* adapters,
                                                 const TrainingBlockRunner& run_block) const {
  if (run_block) throw Error(model_type() + "'s graph does not run its blocks one by one here");
  auto caches = make_caches();
  return forward(tokens, caches, adapters);
}

}  // namespace mlx_cpp
