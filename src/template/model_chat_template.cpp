#include "template/model_chat_template.h"

#include <fstream>
#include <sstream>

#include "io/error.h"
#include "io/json_depth.h"

namespace mlx_cpp {
namespace {

using Json = nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("chat template: cannot read " + path.string());
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Json read_config(const std::filesystem::path& path) {
  const std::string text = read_text(path);
  check_json_depth(text, "chat template: " + path.string());
  try {
    return Json::parse(text);
  } catch (const Json::exception& error) {  // syntax, or a number out of range
    throw Error("chat template: " + path.string() + " is not valid JSON (" + error.what() + ")");
  }
}

std::string template_from_config(const Json& config, const std::filesystem::path& config_path) {
  auto found = config.find("chat_template");
  if (found == config.end() || found->is_null()) {
    throw Error("chat template: no chat_template in " + config_path.string() +
                " and no chat_template.jinja beside it");
  }
  if (found->is_string()) return found->get<std::string>();
  if (!found->is_array()) {
    throw Error("chat template: chat_template in " + config_path.string() +
                " is neither a string nor a list");
  }
  std::string names;
  for (const auto& entry : *found) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template")) continue;
    if (entry["name"] == "default" && entry["template"].is_string()) {
      return entry["template"].get<std::string>();
    }
    names += (names.empty() ? "" : ", ") + entry["name"].dump();
  }
  throw Error("chat template: " + config_path.string() + " has no \"default\" chat template (has " +
              names + ")");
}

Json special_tokens_from_config(const Json& config) {
  Json tokens = Json::object();
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto found = config.find(name);
    if (found == config.end()) continue;
    if (found->is_string()) {
      tokens[name] = *found;
    } else if (found->is_object() && found->contains("content")) {
      tokens[name] = (*found)["content"];
    }
  }
  return tokens;
}

}  // namespace

nlohmann::ordered_json load_model_special_tokens(const std::filesystem::path& model_directory) {
  std::filesystem::path config_path = model_directory / "tokenizer_config.json";
  if (!std::filesystem::exists(config_path)) return Json::object();
  return special_tokens_from_config(read_config(config_path));
}

std::string read_chat_template_file(const std::filesystem::path& path) {
  std::string source = read_text(path);
  if (source.empty()) throw Error("chat template: " + path.string() + " is empty");
  return source;
}

ModelChatTemplate load_model_chat_template(const std::filesystem::path& model_directory) {
  std::filesystem::path config_path = model_directory / "tokenizer_config.json";
  std::filesystem::path jinja_path = model_directory / "chat_template.jinja";
  bool has_config = std::filesystem::exists(config_path);
  if (!has_config && !std::filesystem::exists(jinja_path)) {
    throw Error("chat template: " + model_directory.string() +
                " has neither tokenizer_config.json nor chat_template.jinja");
  }
  Json config = has_config ? read_config(config_path) : Json::object();
  ModelChatTemplate result;
  result.special_tokens = special_tokens_from_config(config);
  result.source = std::filesystem::exists(jinja_path) ? read_text(jinja_path)
                                                      : template_from_config(config, config_path);
  return result;
}

}  // namespace mlx_cpp
