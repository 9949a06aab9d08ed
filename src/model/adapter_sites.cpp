#include "model/adapter_sites.h"

#include "model/switch_glu.h"

namespace mlx_cpp {

void AdapterSites::add(const std::string& module, int layer, Linear& linear) {
  linear.set_adapter_site(size());
  by_module_[module] = size();
  sites_.push_back({module, layer, &linear, nullptr});
}

void AdapterSites::add(const std::string& module, int layer, SwitchLinear& experts) {
  experts.set_adapter_site(size());
  by_module_[module] = size();
  sites_.push_back({module, layer, nullptr, &experts});
}

std::optional<int> AdapterSites::find(const std::string& module) const {
  auto found = by_module_.find(module);
  if (found == by_module_.end()) return std::nullopt;
  return found->second;
}

}  // namespace mlx_cpp
