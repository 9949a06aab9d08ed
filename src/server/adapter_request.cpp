#include "server/adapter_request.h"

#include <cmath>

#include "io/error.h"
#include "server/api_error.h"

namespace mlx_cpp::server {
namespace {

std::vector<AdapterChoice> parse_stack_text(const std::string& text, const std::string& field) {
  try {
    return parse_adapter_stack(text);
  } catch (const Error& error) {
    throw invalid_request(error.what(), field);
  }
}

AdapterChoice parse_list_item(const nlohmann::ordered_json& item) {
  if (item.is_string()) return {item.get<std::string>(), 1.0f};
  if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
    throw invalid_request("'adapter' list items are names or {\"name\", \"scale\"} objects",
                          "adapter");
  AdapterChoice choice{item["name"].get<std::string>(), 1.0f};
  for (const char* key : {"scale", "weight"}) {
    if (!item.contains(key)) continue;
    if (!item[key].is_number() || !std::isfinite(item[key].get<double>()))
      throw invalid_request(std::string("'adapter' ") + key + " must be a number", "adapter");
    choice.weight = item[key].get<float>();
  }
  if (choice.name.empty()) throw invalid_request("'adapter' has an empty name", "adapter");
  return choice;
}

}  // namespace

std::vector<AdapterChoice> parse_adapter_choices(const nlohmann::ordered_json& body,
                                                 const std::string& model_id) {
  std::vector<AdapterChoice> choices;
  auto field = body.find("adapter");
  if (field != body.end() && !field->is_null()) {
    if (field->is_string()) {
      if (!field->get<std::string>().empty()) choices = parse_stack_text(*field, "adapter");
    } else if (field->is_array()) {
      for (const auto& item : *field) choices.push_back(parse_list_item(item));
    } else {
      throw invalid_request("'adapter' must be a name, \"a+b\", or a list of adapters", "adapter");
    }
  }
  // "<model>:<adapters>": only when the part before the colon is the
  // served model's name (other names with colons are served as they are).
  auto model = body.find("model");
  if (model != body.end() && model->is_string()) {
    const auto& name = model->get_ref<const std::string&>();
    const auto colon = name.rfind(':');
    if (colon != std::string::npos && name.substr(0, colon) == model_id) {
      if (!choices.empty())
        throw invalid_request("adapters are given both in 'model' and in 'adapter': give one",
                              "model");
      choices = parse_stack_text(name.substr(colon + 1), "model");
    }
  }
  return choices;
}

}  // namespace mlx_cpp::server
