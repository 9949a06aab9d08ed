#pragma once
// The projections of a model an adapter can change, numbered: a site is a
// Linear or a stack of experts (SwitchLinear), named by its module path as
// the model's weights name it ("model.layers.3.self_attn.q_proj").
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp {

class Linear;
class SwitchLinear;

struct AdapterSite {
  std::string module;
  int layer = -1;  // its block; -1 outside the blocks (lm_head)
  const Linear* linear = nullptr;
  const SwitchLinear* experts = nullptr;
};

class AdapterSites {
 public:
  // Numbers the projection (its site is set) and records it.
  void add(const std::string& module, int layer, Linear& linear);
  void add(const std::string& module, int layer, SwitchLinear& experts);
  std::optional<int> find(const std::string& module) const;
  const AdapterSite& operator[](int site) const { return sites_[site]; }
  int size() const { return static_cast<int>(sites_.size()); }

 private:
  std::vector<AdapterSite> sites_;
  std::map<std::string, int> by_module_;
};

}  // namespace mlx_cpp
