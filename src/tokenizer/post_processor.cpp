#include "tokenizer/post_processor.h"

#include "io/error.h"
#include "tokenizer/json_fields.h"

namespace mlx_cpp {
namespace {

std::vector<TokenId> template_special_ids(const nlohmann::json& spec, const std::string& name) {
  const auto specials = spec.find("special_tokens");
  if (specials == spec.end() || !specials->is_object() || !specials->contains(name) ||
      !(*specials)[name].contains("ids") || !(*specials)[name]["ids"].is_array()) {
    throw Error("[tokenizer.json] TemplateProcessing uses special token '" + name +
                "' without listing its ids");
  }
  return (*specials)[name]["ids"].get<std::vector<TokenId>>();
}

// TemplateProcessing's "single" template: special tokens before and after $A.
SpecialTokenFrame template_frame(const nlohmann::json& spec) {
  SpecialTokenFrame frame;
  bool seen_sequence = false;
  for (const auto& item : array_field(spec, "single", "TemplateProcessing")) {
    if (item.contains("Sequence")) {
      if (seen_sequence) throw Error("[tokenizer.json] TemplateProcessing repeats $A in 'single'");
      seen_sequence = true;
    } else if (item.contains("SpecialToken") && item["SpecialToken"].contains("id") &&
               item["SpecialToken"]["id"].is_string()) {
      auto ids = template_special_ids(spec, item["SpecialToken"]["id"].get<std::string>());
      auto& side = seen_sequence ? frame.suffix : frame.prefix;
      side.insert(side.end(), ids.begin(), ids.end());
    } else {
      throw Error("[tokenizer.json] TemplateProcessing item is malformed: " + item.dump());
    }
  }
  return frame;
}

// Roberta / Bert processors: cls $A sep, given as [token, id] pairs.
SpecialTokenFrame cls_sep_frame(const nlohmann::json& spec, const std::string& type) {
  const auto id_of = [&](const char* key) {
    const auto it = spec.find(key);
    if (it == spec.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
      throw Error("[tokenizer.json] " + type + " post-processor lacks '" + key + "'");
    }
    return (*it)[1].get<TokenId>();
  };
  return {{id_of("cls")}, {id_of("sep")}};
}

}  // namespace

SpecialTokenFrame frame_from_post_processor(const nlohmann::json& spec) {
  if (spec.is_null()) return {};
  const std::string type = type_field(spec, "post-processor");
  if (type == "TemplateProcessing") return template_frame(spec);
  if (type == "ByteLevel") return {};  // only trims offsets
  if (type == "RobertaProcessing" || type == "BertProcessing") return cls_sep_frame(spec, type);
  if (type == "Sequence") {
    SpecialTokenFrame frame;
    for (const auto& child : array_field(spec, "processors", "Sequence post-processor")) {
      auto inner = frame_from_post_processor(child);
      frame.prefix.insert(frame.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      frame.suffix.insert(frame.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return frame;
  }
  throw Error("[tokenizer.json] unsupported post-processor type '" + type +
              "' (supported: TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, "
              "Sequence)");
}

}  // namespace mlx_cpp
