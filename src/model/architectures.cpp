#include "model/architectures.h"

#include <algorithm>
#include <map>

#include "io/error.h"
#include "model/architecture_fields.h"
#include "model/config_reader.h"
#include "model/dedicated_graphs.h"

namespace mlx_cpp {
namespace {

// Every family's builders, in one table: dense RMSNorm, LayerNorm, the
// mixtures of experts, then the hybrids.
const architecture::BuilderTable& table() {
  static const architecture::BuilderTable builders = [] {
    architecture::BuilderTable all;
    for (const auto* family :
         {&architecture::rms_norm_builders(), &architecture::layer_norm_builders(),
          &architecture::moe_builders(), &architecture::hybrid_builders()})
      all.insert(all.end(), family->begin(), family->end());
    return all;
  }();
  return builders;
}

}  // namespace

std::string rewrite_name(const std::string& name, const std::vector<NameRewrite>& rules) {
  std::string result = name;
  for (const auto& rule : rules) {
    auto found = result.find(rule.from);
    if (found != std::string::npos) result.replace(found, rule.from.size(), rule.to);
  }
  return result;
}

std::vector<std::string> supported_model_types() {
  auto names = dedicated_model_types();
  for (const auto& [name, builder] : table()) names.push_back(name);
  return names;
}

std::string remap_model_type(const std::string& model_type) {
  static const std::map<std::string, std::string> remapping = {{"mistral", "llama"},
                                                               {"iquestcoder", "llama"}};
  auto found = remapping.find(model_type);
  return found == remapping.end() ? model_type : found->second;
}

TransformerSpec build_transformer_spec(const nlohmann::json& config,
                                       std::set<std::string>* keys_read) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    throw Error("config.json has no string 'model_type'");
  auto model_type = remap_model_type(config["model_type"].get<std::string>());
  for (const auto& [name, builder] : table()) {
    if (name != model_type) continue;
    ConfigReader reader(config);
    auto spec = builder(reader);
    spec.model_type = model_type;
    if (keys_read) *keys_read = reader.keys_read();
    return spec;
  }
  auto requested = config["model_type"].get<std::string>();
  auto join = [](const std::vector<std::string>& names) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    return list;
  };
  auto closest = closest_model_types(requested);
  throw Error("unsupported model_type '" + requested + "'" +
              (closest.empty() ? "" : " (closest supported: " + join(closest) + ")") +
              "; supported: " + join(supported_model_types()) +
              "; mistral and iquestcoder map to llama");
}

std::vector<std::string> closest_model_types(const std::string& model_type) {
  // Edit distance, with a supported name that begins the requested one
  // (qwen3 for qwen3_moe) or the reverse counted as one edit.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    const bool prefix = a.rfind(b, 0) == 0 || b.rfind(a, 0) == 0;
    // {counted, edits}: ties go to fewer real edits (gemma2 before gemma
    // for gemma2x).
    return std::pair<size_t, size_t>{prefix ? std::min<size_t>(row[b.size()], 1) : row[b.size()],
                                     row[b.size()]};
  };
  std::vector<std::pair<std::pair<size_t, size_t>, std::string>> scored;
  const size_t limit = std::max<size_t>(2, model_type.size() / 3);
  for (const auto& name : supported_model_types()) {
    const auto d = distance(model_type, name);
    if (d.first <= limit) scored.emplace_back(d, name);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) names.push_back(scored[i].second);
  return names;
}

}  // namespace mlx_cpp
