// mlx-cpp embed: texts to embedding vectors with an embedding model, one
// JSON array per input on stdout, in input order.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "engine/embedding_runtime.h"
#include "io/error.h"

namespace mlx_cpp::cli {
namespace {

constexpr const char* kDefaultEmbeddingModel = "embeddinggemma-300m";

struct EmbedArguments {
  std::string model = kDefaultEmbeddingModel;
  std::vector<std::string> texts;
  std::string file;
  std::string prompt_name;
  std::optional<int> dimensions;  // none: the model's
  std::string kernels = "fast";
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Shortest text that reads back as the same float32.
void print_embedding(const std::vector<float>& values) {
  std::string line = "[";
  char number[32];
  for (size_t i = 0; i < values.size(); ++i) {
    std::snprintf(number, sizeof number, "%.9g", values[i]);
    if (i) line += ',';
    line += number;
  }
  line += "]\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
}

void run_embed(const EmbedArguments& args) {
  auto texts = args.texts;
  if (!args.file.empty())
    for (auto& line : read_lines(args.file)) texts.push_back(std::move(line));
  if (texts.empty()) throw Error("embed needs --text or a --file with at least one line");
  const auto start = std::chrono::steady_clock::now();
  auto runtime =
      EmbeddingRuntime::open(resolve_model_argument(args.model), parse_kernel_mode(args.kernels));
  const auto loaded = std::chrono::steady_clock::now();
  // Every input is checked before any is computed.
  std::vector<std::vector<int>> inputs;
  size_t tokens = 0;
  for (const auto& text : texts) {
    inputs.push_back(runtime->tokenize(text, args.prompt_name));
    tokens += inputs.back().size();
    try {
      runtime->check_input(inputs.back());
    } catch (const Error& error) {
      throw Error("input " + std::to_string(inputs.size()) + ": " + error.what());
    }
  }
  if (args.dimensions)
    shorten_embedding(std::vector<float>(runtime->dimension()), *args.dimensions);
  for (const auto& embedding : runtime->embed_all(inputs))
    print_embedding(args.dimensions ? shorten_embedding(embedding, *args.dimensions) : embedding);
  std::fflush(stdout);
  std::chrono::duration<double> load_time = loaded - start;
  std::chrono::duration<double> compute = std::chrono::steady_clock::now() - loaded;
  std::cerr << texts.size() << " input(s), " << tokens << " tokens, "
            << args.dimensions.value_or(runtime->dimension()) << " dimensions; load "
            << load_time.count() << " s, embed " << compute.count() << " s ("
            << tokens / std::max(compute.count(), 1e-9) << " tokens/s)\n";
}

}  // namespace

void register_embed_command(CLI::App& app) {
  auto args = std::make_shared<EmbedArguments>();
  auto* command =
      app.add_subcommand("embed", "Embedding vectors of texts, one JSON array per text on stdout");
  command->add_option("-m,--model", args->model, "Embedding model directory or cached name")
      ->capture_default_str();
  command->add_option("--text", args->texts, "A text to embed (repeatable)");
  command->add_option("--file", args->file, "Embed each non-empty line of this file");
  command->add_option("--prompt-name", args->prompt_name,
                      "Put the model's named prompt before each text (e.g. query, document)");
  command->add_option("--dimensions", args->dimensions,
                      "Keep the first N values, normalized again (Matryoshka embeddings)");
  add_kernels_option(command, args->kernels);
  command->callback([args] { run_embed(*args); });
}

}  // namespace mlx_cpp::cli
