#include "engine/memory_policy.h"

#include <mlx/device.h>
#include <mlx/memory.h>

namespace mlx_cpp {

void apply_memory_policy() {
  if (mlx::core::default_device() == mlx::core::Device::cpu) mlx::core::set_cache_limit(0);
}

}  // namespace mlx_cpp
