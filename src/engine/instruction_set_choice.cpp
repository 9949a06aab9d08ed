#include "engine/instruction_set_choice.h"

#include "io/error.h"
#include "kernels/cpu_features.h"

namespace mlx_cpp {

void select_instruction_set(const std::string& name) {
  namespace k = kernels;
  const auto level = k::parse_level(name.empty() ? "native" : name);
  if (!level) throw Error("--isa is one of " + k::level_names() + ", not '" + name + "'");
  if (*level > k::detected_level())
    throw Error(std::string("--isa ") + name + ": this CPU (" + k::cpu_model() + ") runs up to " +
                k::level_name(k::detected_level()));
  k::set_isa_limit(*level);
}

}  // namespace mlx_cpp
