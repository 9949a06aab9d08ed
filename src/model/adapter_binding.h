#pragma once
// Binds an adapter directory's tensors to a model's adapter sites, as
// mlx-lm's load_adapters places them: the adapted blocks are the last
// num_layers, the adapted modules those named by keys (all projections of
// those blocks without keys), and every tensor in the file must belong to
// one of them with the shape the module gives it. Checkpoint renames and
// fused projections are followed: an update of a fused projection (phi3's
// qkv_proj) is split by output rows as the projection is.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "model/adapter_files.h"
#include "model/adapter_sites.h"
#include "model/row_adapters.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

// An adapter module's tensors, by the module's path as the adapter names
// it (a leading "language_model." dropped).
struct AdapterModuleTensors {
  std::optional<mlx::core::array> a, b, m;  // lora_a, lora_b, DoRA's m
};
// Throws Error for a tensor that is no adapter parameter.
std::map<std::string, AdapterModuleTensors> adapter_modules(const AdapterFiles& files);

// Throws Error naming the tensor and what is wrong with it.
std::shared_ptr<const BoundAdapter> bind_adapter(const AdapterFiles& files, const std::string& name,
                                                 const AdapterSites& sites,
                                                 const TransformerSpec& spec);

}  // namespace mlx_cpp
