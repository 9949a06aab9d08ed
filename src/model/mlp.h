#pragma once
// The dense feed-forward branch: gated (down(act(gate(x)) * up(x))) or
// plain (down(act(up(x)))), with the activations mlx-lm's modules use.
#include <mlx/array.h>

#include <optional>
#include <string>

#include "model/adapter_sites.h"
#include "model/layers.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

// apertus's XieLU: its four learned scalars.
struct XieluParameters {
  mlx::core::array alpha_p, alpha_n, beta, eps;
};

struct Mlp {
  std::optional<Linear> gate_proj;
  Linear up_proj, down_proj;
  MlpActivation activation = MlpActivation::silu;
  std::optional<XieluParameters> xielu;
  KernelMode kernels = KernelMode::stock;
  mlx::core::array operator()(const mlx::core::array& x, const RowAdapters& adapters) const;
  // Records its projections as adapter sites under `prefix` ("…mlp.").
  void register_adapter_sites(AdapterSites& sites, const std::string& prefix, int layer) {
    if (gate_proj) sites.add(prefix + "gate_proj", layer, *gate_proj);
    sites.add(prefix + "up_proj", layer, up_proj);
    sites.add(prefix + "down_proj", layer, down_proj);
  }
  size_t bytes() const {
    return (gate_proj ? gate_proj->bytes() : 0) + up_proj.bytes() + down_proj.bytes();
  }

 private:
  mlx::core::array activate(const mlx::core::array& x) const;
};

}  // namespace mlx_cpp
