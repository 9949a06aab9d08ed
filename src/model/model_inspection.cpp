#include "model/model_inspection.h"

#include <algorithm>
#include <set>

#include "io/error.h"
#include "model/architectures.h"
#include "model/config_reader.h"
#include "model/dedicated_graphs.h"
#include "model/language_model.h"

namespace mlx_cpp {
namespace {

// Keys that describe the file or the tokenizer, not the network: no
// builder reads them, and their absence from the graph is not a gap.
const std::set<std::string>& non_model_keys() {
  static const std::set<std::string> keys = {"architectures",
                                             "model_type",
                                             "torch_dtype",
                                             "dtype",
                                             "transformers_version",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "pad_token_id",
                                             "quantization",
                                             "quantization_config",
                                             "text_config",
                                             "use_cache",
                                             "auto_map",
                                             "initializer_range",
                                             "_name_or_path",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "return_dict",
                                             "tokenizer_class",
                                             "attention_dropout",
                                             "hidden_dropout",
                                             "torchscript",
                                             "vocab_file"};
  return keys;
}

std::string describe(const TransformerSpec& spec) {
  std::string text = std::to_string(spec.num_layers) + " layers, hidden " +
                     std::to_string(spec.hidden_size) + ", " + std::to_string(spec.num_heads) +
                     " heads (" + std::to_string(spec.num_kv_heads) + " kv) of " +
                     std::to_string(spec.head_dim) + ", vocab " + std::to_string(spec.vocab_size);
  if (spec.moe) {
    int routed = 0;
    for (bool moe : spec.layer_is_moe) routed += moe;
    text += ", " + std::to_string(routed) + " routed layers of " +
            std::to_string(spec.moe->num_experts) + " experts (" + std::to_string(spec.moe->top_k) +
            " per token)";
  }
  if (spec.short_conv) {
    const auto convolutions =
        std::count(spec.layer_mixers.begin(), spec.layer_mixers.end(), TokenMixer::short_conv);
    text += ", " + std::to_string(convolutions) + " short-convolution layers of " +
            std::to_string(spec.short_conv->kernel_size) + " taps";
  }
  if (spec.gated_delta) {
    const auto delta =
        std::count(spec.layer_mixers.begin(), spec.layer_mixers.end(), TokenMixer::gated_delta);
    text += ", " + std::to_string(delta) + " gated DeltaNet layers (" +
            std::to_string(spec.gated_delta->value_heads) + " value heads of " +
            std::to_string(spec.gated_delta->value_dim) + ")";
  }
  if (spec.bidirectional) text += "; an encoder (attention both ways): embeddings, not text";
  return text;
}

}  // namespace

ModelInspection inspect_model(const std::filesystem::path& directory) {
  ModelInspection report;
  auto config = read_model_config(directory);
  report.model_type = config.value("model_type", nlohmann::json()).is_string()
                          ? config["model_type"].get<std::string>()
                          : std::string();
  std::set<std::string> read;
  try {
    const auto* dedicated = find_dedicated_graph(remap_model_type(report.model_type));
    if (dedicated) {
      ConfigReader reader(config);
      report.shape = dedicated->describe(reader);
      read = reader.keys_read();
      report.tier = "dedicated";
    } else {
      auto spec = build_transformer_spec(config, &read);
      report.tier = spec.moe ? "generic mixture of experts" : "generic dense";
      report.shape = describe(spec);
    }
  } catch (const Error& error) {
    report.refusal = error.what();
    return report;
  }
  report.supported = true;
  for (const auto& [key, value] : config.items())
    if (!read.count(key) && !non_model_keys().count(key)) report.unread_config_keys.push_back(key);
  try {
    // The stock path builds the graph lazily: the audit runs on the
    // headers' shapes and dtypes, no tensor data is read.
    auto loaded = load_model(directory, {KernelMode::stock});
    report.parameter_count = loaded.model->parameter_count();
  } catch (const Error& error) {
    report.weight_problems = error.what();
  }
  return report;
}

}  // namespace mlx_cpp
