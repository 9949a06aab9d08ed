// `mlx-cpp template`: renders a chat template the way the server will,
// so a prompt can be inspected (and compared with transformers') without
// loading a model.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "io/error.h"
#include "io/json_depth.h"
#include "template/chat_template.h"
#include "template/model_chat_template.h"

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
  check_json_depth(text, "template: " + what);
  try {
    return Json::parse(text);
  } catch (const Json::exception& error) {  // syntax, or a number out of range
    throw Error("template: " + what + " is not valid JSON (" + error.what() + ")");
  }
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
  std::string source;
  if (options.model.empty()) {
    source = read_text(options.template_file);
  } else {
    ModelChatTemplate model = load_model_chat_template(resolve_model_argument(options.model));
    source = std::move(model.source);
    context = std::move(model.special_tokens);
  }
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
