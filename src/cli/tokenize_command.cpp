// mlx-cpp tokenize / detokenize: see exactly which ids a text becomes.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "io/error.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp::cli {
namespace {

struct TokenizeArguments {
  std::string model = kDefaultModel;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool add_special = false;
};

struct DetokenizeArguments {
  std::string model = kDefaultModel;
  std::vector<int> ids;
  bool skip_special = false;
};

std::string read_text_file(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error("cannot read " + path);
  std::stringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

void run_tokenize(const TokenizeArguments& args) {
  auto tokenizer = Tokenizer::from_directory(resolve_model_argument(args.model));
  const auto text = args.file.empty() ? args.text : read_text_file(args.file);
  const auto ids = tokenizer->encode(text, args.add_special);
  if (args.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << '\n';
    return;
  }
  for (int id : ids)
    std::cout << id << '\t' << nlohmann::json(tokenizer->id_to_token(id).value_or("")).dump()
              << '\n';
  std::cerr << ids.size() << " tokens\n";
}

void run_detokenize(const DetokenizeArguments& args) {
  auto tokenizer = Tokenizer::from_directory(resolve_model_argument(args.model));
  for (int id : args.ids)
    if (id < 0 || static_cast<size_t>(id) >= tokenizer->vocab_size())
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(tokenizer->vocab_size()) + ")");
  std::cout << tokenizer->decode(args.ids, args.skip_special) << '\n';
}

}  // namespace

void register_tokenize_commands(CLI::App& app) {
  auto tokenize = std::make_shared<TokenizeArguments>();
  auto* command = app.add_subcommand("tokenize", "Show the token ids of a text");
  command->add_option("-m,--model", tokenize->model, "Model directory or cached model name")
      ->capture_default_str();
  auto* text = command->add_option("--text", tokenize->text, "Text to tokenize");
  auto* file = command->add_option("--file", tokenize->file, "Read the text from a file");
  text->excludes(file);
  command->add_flag("--ids-only", tokenize->ids_only, "Print only space-separated ids");
  command->add_flag("--add-special", tokenize->add_special,
                    "Add BOS/EOS as the tokenizer config says (default: the text alone)");
  command->callback([tokenize, text, file] {
    if (!*text && !*file) throw Error("tokenize needs --text or --file");
    run_tokenize(*tokenize);
  });

  auto detokenize = std::make_shared<DetokenizeArguments>();
  auto* decode = app.add_subcommand("detokenize", "Turn token ids back into text");
  decode->add_option("-m,--model", detokenize->model, "Model directory or cached model name")
      ->capture_default_str();
  decode->add_option("ids", detokenize->ids, "Token ids")->required();
  decode->add_flag("--skip-special", detokenize->skip_special, "Drop special tokens");
  decode->callback([detokenize] { run_detokenize(*detokenize); });
}

}  // namespace mlx_cpp::cli
