#include "cli/model_argument.h"

#include "io/error.h"

namespace mlx_cpp::cli {

std::filesystem::path resolve_model_argument(const std::string& name_or_directory) {
  std::filesystem::path path(name_or_directory);
  if (std::filesystem::is_directory(path)) return path;
  throw Error("model '" + name_or_directory + "' is not a directory");
}

}  // namespace mlx_cpp::cli
