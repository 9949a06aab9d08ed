#include "model/adapter_binding.h"

#include <mlx/linalg.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <map>

#include "io/error.h"
#include "model/layers.h"
#include "model/switch_glu.h"
#include "model/weight_store.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

// One projection an adapter module lands on (a fused module: several).
struct Placement {
  std::string module;
  mx::array b;
  std::optional<mx::array> m;
};

const std::string kBlockPrefix = "model.layers.";

// "model.layers.7.self_attn.q_proj" → {7, "self_attn.q_proj"}; nullopt
// outside the blocks.
std::optional<std::pair<int, std::string>> block_of(const std::string& module) {
  if (module.rfind(kBlockPrefix, 0) != 0) return std::nullopt;
  const auto dot = module.find('.', kBlockPrefix.size());
  if (dot == std::string::npos) return std::nullopt;
  const auto index = module.substr(kBlockPrefix.size(), dot - kBlockPrefix.size());
  if (index.empty() || !std::all_of(index.begin(), index.end(), ::isdigit) || index.size() > 6)
    return std::nullopt;
  return std::pair{std::stoi(index), module.substr(dot + 1)};
}

std::string last_component(const std::string& module) {
  const auto dot = module.rfind('.');
  return dot == std::string::npos ? module : module.substr(dot + 1);
}

// The rows of a fused projection's output axis, split as the weights are
// (WeightStore::split_rows): [groups, per_group] and each part's rows from
// every group.
// The index of the first part named as part i.
std::size_t first_of_name(const FusedProjection& fused, std::size_t i) {
  std::size_t first = 0;
  while (fused.parts[first].first != fused.parts[i].first) ++first;
  return first;
}

// The distinct part names, in order of first appearance.
std::vector<std::string> part_names(const FusedProjection& fused) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < fused.parts.size(); ++i)
    if (first_of_name(fused, i) == i) names.push_back(fused.parts[i].first);
  return names;
}

std::vector<mx::array> split_output(const mx::array& tensor, int axis, const FusedProjection& fused,
                                    const std::string& name) {
  int per_group = 0;
  for (const auto& part : fused.parts) per_group += part.second;
  if (tensor.shape(axis) != fused.groups * per_group)
    throw Error("adapter: " + name + " has " + describe_shape(tensor.shape()) + ", expected " +
                std::to_string(fused.groups * per_group) + " outputs to split");
  auto grouped_shape = tensor.shape();
  grouped_shape[axis] = per_group;
  grouped_shape.insert(grouped_shape.begin() + axis, fused.groups);
  auto grouped = mx::reshape(tensor, grouped_shape);
  // One array per distinct part name: parts of one name join, in order.
  std::vector<std::vector<mx::array>> pieces(fused.parts.size());
  int start = 0;
  for (std::size_t i = 0; i < fused.parts.size(); ++i) {
    const int rows = fused.parts[i].second;
    auto begin = mx::Shape(grouped.ndim(), 0);
    auto stop = grouped.shape();
    begin[axis + 1] = start;
    stop[axis + 1] = start + rows;
    auto shape = tensor.shape();
    shape[axis] = fused.groups * rows;
    pieces[first_of_name(fused, i)].push_back(
        mx::contiguous(mx::reshape(mx::slice(grouped, begin, stop), shape)));
    start += rows;
  }
  std::vector<mx::array> parts;
  for (auto& arrays : pieces)
    if (!arrays.empty())
      parts.push_back(arrays.size() == 1 ? arrays.front() : mx::concatenate(arrays, axis));
  return parts;
}

// Whether mlx-lm's load_adapters would have made `module` (named as the
// checkpoint names it; `renamed` as the model does) an adapter module, or
// why not.
std::optional<std::string> refusal_by_config(const std::string& module, const std::string& renamed,
                                             const AdapterFiles& files, int depth) {
  const bool every_block = files.num_layers <= 0 || files.num_layers >= depth;
  const int first = every_block ? 0 : depth - files.num_layers;
  auto listed = [&](const std::string& key) {
    return files.keys &&
           std::find(files.keys->begin(), files.keys->end(), key) != files.keys->end();
  };
  if (auto block = block_of(renamed)) {
    // Keys name a module within its block as the checkpoint does
    // (exaone's "attn.attention.k_proj" in "transformer.h.0.").
    const auto marker = "." + std::to_string(block->first) + ".";
    const auto at = module.find(marker);
    if (at != std::string::npos) block->second = module.substr(at + marker.size());
    if (block->first >= depth)
      return "the model has " + std::to_string(depth) + " blocks, not " +
             std::to_string(block->first + 1);
    if (block->first < first)
      return "num_layers " + std::to_string(files.num_layers) + " adapts blocks " +
             std::to_string(first) + " to " + std::to_string(depth - 1) + " only";
    if (files.keys && !listed(block->second))
      return "\"" + block->second + "\" is not among the config's keys";
    return std::nullopt;
  }
  if (!listed(module)) return "a module outside the blocks is adapted only when keys name it";
  return std::nullopt;
}

}  // namespace

std::map<std::string, AdapterModuleTensors> adapter_modules(const AdapterFiles& files) {
  std::map<std::string, AdapterModuleTensors> modules;
  for (const auto& [full_name, tensor] : files.tensors) {
    auto name = full_name;
    if (name.rfind("language_model.", 0) == 0) name = name.substr(15);
    const auto dot = name.rfind('.');
    const auto leaf = dot == std::string::npos ? name : name.substr(dot + 1);
    const auto module = dot == std::string::npos ? std::string() : name.substr(0, dot);
    auto& entry = modules[module];
    if (leaf == "lora_a") {
      entry.a = tensor;
    } else if (leaf == "lora_b") {
      entry.b = tensor;
    } else if (leaf == "m" && files.fine_tune_type == "dora") {
      entry.m = tensor;
    } else {
      throw Error("adapter " + files.directory.string() + ": " + full_name +
                  " is not an adapter parameter (lora_a, lora_b" +
                  (files.fine_tune_type == "dora" ? ", m" : "") + ")");
    }
    if (module.empty())
      throw Error("adapter " + files.directory.string() + ": " + full_name + " names no module");
  }
  return modules;
}

namespace {

void expect_shape(const mx::array& tensor, const mx::Shape& shape, const std::string& name) {
  if (tensor.shape() != shape)
    throw Error("adapter: " + name + " has shape " + describe_shape(tensor.shape()) +
                ", the model's projection takes " + describe_shape(shape));
}

// m / ||W + (scale · bᵀ) aᵀ|| per output row, as DoRALinear computes it.
mx::array dora_magnitude_ratio(const mx::array& weight, const mx::array& a, const mx::array& b,
                               const mx::array& m, float scale) {
  auto product =
      mx::matmul(mx::multiply(mx::array(scale, b.dtype()), mx::transpose(b)), mx::transpose(a));
  auto norms = mx::linalg::norm(mx::add(weight, product), std::vector<int>{1});
  return mx::divide(m, norms);
}

LowRankUpdate make_update(const AdapterFiles& files, const AdapterSite& site, const mx::array& a,
                          const Placement& placement) {
  const auto& module = placement.module;
  const int rank = files.rank;
  auto as_float32 = [](const mx::array& factor) {
    return factor.dtype() == mx::float32 ? factor : mx::astype(factor, mx::float32);
  };
  LowRankUpdate update{a, placement.b, files.scale};
  if (!site.experts) {
    update.a_t32 = mx::contiguous(mx::transpose(as_float32(a)));
    update.b32 = mx::contiguous(as_float32(placement.b));
  }
  if (site.experts) {
    const auto& experts = *site.experts;
    if (files.fine_tune_type == "dora")
      throw Error("adapter: " + module + " is a stack of experts: DoRA does not adapt those");
    expect_shape(a, {experts.experts(), rank, experts.input_dims()}, module + ".lora_a");
    expect_shape(placement.b, {experts.experts(), experts.output_dims(), rank}, module + ".lora_b");
    return update;
  }
  const auto& linear = *site.linear;
  expect_shape(a, {linear.input_dims(), rank}, module + ".lora_a");
  expect_shape(placement.b, {rank, linear.output_dims()}, module + ".lora_b");
  if (files.fine_tune_type != "dora") return update;
  if (!placement.m) throw Error("adapter: DoRA module " + module + " has no m");
  expect_shape(*placement.m, {linear.output_dims()}, module + ".m");
  auto weight = linear.stock_weight();
  if (!weight)
    throw Error("adapter: DoRA on " + module +
                " needs the weights in MLX's layout; run with --kernels stock");
  update.dora = LowRankUpdate::Dora{
      *weight, dora_magnitude_ratio(*weight, a, placement.b, *placement.m, files.scale)};
  return update;
}

}  // namespace

std::shared_ptr<const BoundAdapter> bind_adapter(const AdapterFiles& files, const std::string& name,
                                                 const AdapterSites& sites,
                                                 const TransformerSpec& spec) {
  auto adapter = std::make_shared<BoundAdapter>();
  adapter->name = name;
  adapter->directory = files.directory.string();
  adapter->fine_tune_type = files.fine_tune_type;
  adapter->fingerprint = files.fingerprint;
  adapter->rank = files.rank;
  adapter->scale = files.scale;
  adapter->by_site.resize(sites.size());
  const auto where = "adapter " + files.directory.string() + ": ";
  std::vector<mx::array> arrays;
  for (const auto& [module, tensors] : adapter_modules(files)) {
    // The checkpoint's renames, then a fused projection's parts.
    auto renamed = rewrite_name(module + ".", spec.weight_names);
    renamed.pop_back();
    if (auto refusal = refusal_by_config(module, renamed, files, spec.num_layers))
      throw Error(where + module + " is not an adapter module of this model: " + *refusal);
    if (!tensors.a || !tensors.b)
      throw Error(where + module + " has " + (tensors.a ? "lora_a but no lora_b" : "no lora_a"));
    std::vector<Placement> placements;
    const auto fused = std::find_if(spec.fused_projections.begin(), spec.fused_projections.end(),
                                    [&](const FusedProjection& projection) {
                                      return last_component(renamed) == projection.fused;
                                    });
    if (fused == spec.fused_projections.end()) {
      placements.push_back({renamed, *tensors.b, tensors.m});
    } else {
      const auto stem = renamed.substr(0, renamed.size() - fused->fused.size());
      auto b_parts = split_output(*tensors.b, tensors.b->ndim() - 1, *fused, module + ".lora_b");
      std::optional<std::vector<mx::array>> m_parts;
      if (tensors.m) m_parts = split_output(*tensors.m, 0, *fused, module + ".m");
      const auto names = part_names(*fused);
      for (std::size_t i = 0; i < names.size(); ++i)
        placements.push_back(
            {stem + names[i], b_parts[i], m_parts ? std::optional((*m_parts)[i]) : std::nullopt});
    }
    for (const auto& placement : placements) {
      auto site = sites.find(placement.module);
      if (!site)
        throw Error(where + module + ": this model has no projection there that takes an adapter");
      auto update = make_update(files, sites[*site], *tensors.a, placement);
      for (const auto* array : {&update.a, &update.b, &update.a_t32, &update.b32})
        arrays.push_back(*array);
      if (update.dora) arrays.push_back(update.dora->magnitude_ratio);
      adapter->bytes += update.a.nbytes() + update.b.nbytes();
      adapter->by_site[*site] = std::move(update);
    }
  }
  mx::eval(arrays);
  return adapter;
}

}  // namespace mlx_cpp
