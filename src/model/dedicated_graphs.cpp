#include "model/dedicated_graphs.h"

namespace mlx_cpp {
namespace {

const std::vector<DedicatedGraph>& graphs() {
  static const std::vector<DedicatedGraph> all = {};
  return all;
}

}  // namespace

const DedicatedGraph* find_dedicated_graph(const std::string& model_type) {
  for (const auto& graph : graphs())
    if (graph.model_type == model_type) return &graph;
  return nullptr;
}

std::vector<std::string> dedicated_model_types() {
  std::vector<std::string> names;
  for (const auto& graph : graphs()) names.push_back(graph.model_type);
  return names;
}

}  // namespace mlx_cpp
