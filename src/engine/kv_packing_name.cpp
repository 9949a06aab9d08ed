// The KV packing's name, apart from the scheme's model checks, so request
// parsing (and its fuzz target) links it without the model layer.
#include "engine/kv_cache_scheme.h"
#include "io/error.h"

namespace mlx_cpp {

kernels::KvPacking parse_kv_packing(const std::string& name) {
  if (name == "affine") return kernels::KvPacking::affine;
  if (name == "turbo") return kernels::KvPacking::turbo;
  throw Error("the KV scheme must be affine or turbo (got '" + name + "')");
}

const char* kv_packing_name(kernels::KvPacking packing) {
  return packing == kernels::KvPacking::turbo ? "turbo" : "affine";
}

}  // namespace mlx_cpp
