#include "cli/model_argument.h"

#include "io/error.h"
#include "io/model_cache.h"

namespace mlx_cpp::cli {

std::filesystem::path resolve_model_argument(const std::string& name_or_directory) {
  return resolve_model_path(name_or_directory);
}

KernelMode parse_kernel_mode(const std::string& name) {
  if (name == "fast") return KernelMode::fast;
  if (name == "stock") return KernelMode::stock;
  throw Error("--kernels must be fast or stock, not '" + name + "'");
}

}  // namespace mlx_cpp::cli
