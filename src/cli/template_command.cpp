// `mlx-cpp template`: renders a chat template the way the server will,
// so a prompt can be inspected (and compared with transformers') without
// loading a model.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "io/error.h"
#include "template/chat_template.h"

namespace mlx_cpp::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("template: cannot read " + path.string());
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Ordered parsing keeps the key order of tool schemas, which tojson shows.
Json parse_json(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    throw Error("template: " + what + " is not valid JSON (" + error.what() + ")");
  }
}

// tokenizer_config.json's chat_template is a string or a list of
// {"name", "template"}, of which transformers uses "default".
std::string template_from_config(const Json& config, const std::filesystem::path& config_path) {
  auto found = config.find("chat_template");
  if (found == config.end() || found->is_null()) {
    throw Error("template: no chat_template in " + config_path.string() +
                " and no chat_template.jinja");
  }
  if (found->is_string()) return found->get<std::string>();
  if (found->is_array()) {
    std::string names;
    for (const auto& entry : *found) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template")) continue;
      if (entry["name"] == "default") return entry["template"].get<std::string>();
      names += (names.empty() ? "" : ", ") + entry["name"].dump();
    }
    throw Error("template: " + config_path.string() + " has no \"default\" chat template (has " +
                names + ")");
  }
  throw Error("template: chat_template in " + config_path.string() +
              " is neither a string nor a list");
}

// Special tokens as transformers passes them: a string or {"content": ...}.
void add_special_tokens(const Json& config, Json& context) {
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto found = config.find(name);
    if (found == config.end()) continue;
    if (found->is_string())
      context[name] = *found;
    else if (found->is_object() && found->contains("content"))
      context[name] = (*found)["content"];
  }
}

// A model directory: chat_template.jinja wins over tokenizer_config.json,
// as in transformers.
std::string load_model_template(const std::filesystem::path& model, Json& context) {
  std::filesystem::path config_path = model / "tokenizer_config.json";
  Json config = std::filesystem::exists(config_path)
                    ? parse_json(read_text(config_path), config_path.string())
                    : Json::object();
  add_special_tokens(config, context);
  std::filesystem::path jinja_path = model / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) return read_text(jinja_path);
  if (!std::filesystem::exists(config_path)) {
    throw Error("template: " + model.string() +
                " has neither tokenizer_config.json nor chat_template.jinja");
  }
  return template_from_config(config, config_path);
}

struct TemplateOptions {
  std::string model;
  std::string template_file;
  std::string input;
  std::string kwargs;
  bool add_generation_prompt = false;
};

void run_template_command(const TemplateOptions& options) {
  Json context = Json::object();
  std::string source = options.model.empty() ? read_text(options.template_file)
                                             : load_model_template(options.model, context);
  Json input = parse_json(read_text(options.input), options.input);
  if (!input.is_object()) throw Error("template: " + options.input + " must hold a JSON object");
  for (const auto& [key, value] : input.items()) context[key] = value;
  context["add_generation_prompt"] = options.add_generation_prompt;
  if (!options.kwargs.empty()) {
    Json kwargs = parse_json(options.kwargs, "--kwargs");
    if (!kwargs.is_object()) throw Error("template: --kwargs must be a JSON object");
    for (const auto& [key, value] : kwargs.items()) context[key] = value;
  }
  std::cout << ChatTemplate(source).render(context) << std::flush;
}

}  // namespace

void register_template_command(CLI::App& app) {
  auto options = std::make_shared<TemplateOptions>();
  CLI::App* command = app.add_subcommand(
      "template", "Render a chat template for a conversation (prints the prompt as is)");
  auto* model = command->add_option(
      "--model", options->model, "model directory (chat_template.jinja or tokenizer_config.json)");
  auto* file = command->add_option("--template", options->template_file, "Jinja template file");
  model->excludes(file);
  file->excludes(model);
  command
      ->add_option("--input", options->input, R"(JSON file: {"messages": [...], "tools": [...]})")
      ->required();
  command->add_flag("--add-generation-prompt", options->add_generation_prompt,
                    "end with the assistant turn's opening");
  command->add_option("--kwargs", options->kwargs,
                      "JSON object of extra template variables (overrides bos_token/eos_token)");
  command->callback([options] {
    if (options->model.empty() && options->template_file.empty()) {
      throw Error("template: give --model DIR or --template FILE");
    }
    run_template_command(*options);
  });
}

}  // namespace mlx_cpp::cli
