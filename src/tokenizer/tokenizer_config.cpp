#include "tokenizer/tokenizer_config.h"

#include <fstream>
#include <sstream>

#include "io/error.h"
#include "io/json_file.h"

namespace mlx_cpp {
namespace {

// A token is written as a string or as an AddedToken object {content: ...}.
std::string token_string(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  throw Error(std::string("[tokenizer_config.json] '") + key +
              "' must be a string or an object with 'content'");
}

std::optional<bool> optional_bool(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) {
    throw Error(std::string("[tokenizer_config.json] '") + key + "' must be true or false");
  }
  return it->get<bool>();
}

// A string, or a list of {name, template} from which "default" is taken.
std::string chat_template(const nlohmann::json& config) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        return entry["template"].get<std::string>();
      }
    }
    return "";
  }
  throw Error("[tokenizer_config.json] 'chat_template' must be a string or a list of templates");
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::filesystem::path& dir) {
  TokenizerConfig result;
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    const auto config = read_json_file(config_path);
    if (!config.is_object())
      throw Error("[tokenizer] " + config_path.string() + " is not an object");
    result.bos_token = token_string(config, "bos_token");
    result.eos_token = token_string(config, "eos_token");
    result.add_bos_token = optional_bool(config, "add_bos_token");
    result.add_eos_token = optional_bool(config, "add_eos_token");
    result.chat_template = chat_template(config);
  }
  const auto jinja_path = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) {
    std::ifstream stream(jinja_path, std::ios::binary);
    if (!stream) throw Error("[tokenizer] cannot open " + jinja_path.string());
    std::stringstream buffer;
    buffer << stream.rdbuf();
    result.chat_template = buffer.str();
  }
  return result;
}

}  // namespace mlx_cpp
