#include "engine/training/training_data.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

enum class Format { completions, chat, text };

Format format_of(const nlohmann::ordered_json& first, const std::string& where) {
  if (first.contains("prompt") && first.contains("completion")) return Format::completions;
  if (first.contains("messages")) return Format::chat;
  if (first.contains("text")) return Format::text;
  throw Error(where +
              ": unsupported data format: records need \"prompt\" and \"completion\", "
              "\"messages\", or \"text\" (\"prompt\", \"chosen\" and \"rejected\" are "
              "preference records, for --train-mode dpo or orpo)");
}

std::vector<int> templated(const ModelRuntime& runtime, const nlohmann::ordered_json& messages,
                           const nlohmann::ordered_json& tools, bool add_generation_prompt) {
  return runtime.encode(runtime.render_chat(messages, tools, add_generation_prompt),
                        /*add_special_tokens=*/false);
}

TrainingExample example_of(const ModelRuntime& runtime, const nlohmann::ordered_json& record,
                           Format format, bool mask_prompt, const std::string& where) {
  TrainingExample example;
  example.fields = static_cast<int>(record.size());
  auto text_field = [&](const char* key) {
    if (!record.contains(key) || !record[key].is_string())
      throw Error(where + ": \"" + key + "\" must be a string");
    return record[key].get<std::string>();
  };
  if (format == Format::text) {
    if (mask_prompt) throw Error(where + ": mask_prompt needs prompts (not \"text\" records)");
    example.tokens = runtime.encode(text_field("text"), /*add_special_tokens=*/true);
    const auto eos = runtime.tokenizer().eos_token_id();
    if (eos && (example.tokens.empty() || example.tokens.back() != *eos))
      example.tokens.push_back(*eos);
    return example;
  }
  if (!runtime.has_chat_template())
    throw Error(where + ": chat records need the model's chat template, and it has none");
  const auto tools = record.contains("tools") ? record["tools"] : nlohmann::ordered_json();
  nlohmann::ordered_json messages;
  if (format == Format::completions) {
    messages = nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", text_field("prompt")}},
         {{"role", "assistant"}, {"content", text_field("completion")}}});
  } else {
    messages = record["messages"];
    if (!messages.is_array() || messages.empty())
      throw Error(where + ": \"messages\" must be a non-empty list");
  }
  example.tokens = templated(runtime, messages, tools, false);
  if (mask_prompt) {
    const bool ends_with_reply = format == Format::completions ||
                                 messages.back().value("role", std::string()) == "assistant";
    auto prompt = messages;
    prompt.erase(prompt.size() - 1);
    example.offset = static_cast<int>(templated(runtime, prompt, tools, ends_with_reply).size());
  }
  return example;
}

}  // namespace

namespace {

// Each non-blank line of DIR/split.jsonl as a JSON object, with where it
// came from; false when the file is absent.
template <typename OnRecord>
bool read_records(const std::filesystem::path& path, OnRecord on_record) {
  if (!std::filesystem::exists(path)) return false;
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path.string());
  std::string line;
  bool any = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto where = path.string() + " line " + std::to_string(number);
    nlohmann::ordered_json record;
    try {
      record = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::exception& error) {
      throw Error(where + ": not JSON (" + error.what() + ")");
    }
    if (!record.is_object()) throw Error(where + ": expected a JSON object");
    on_record(record, where);
    any = true;
  }
  if (!any) throw Error(path.string() + " holds no records");
  return true;
}

}  // namespace

std::optional<std::vector<TrainingExample>> load_training_split(const ModelRuntime& runtime,
                                                                const std::filesystem::path& dir,
                                                                const std::string& split,
                                                                bool mask_prompt) {
  std::vector<TrainingExample> examples;
  std::optional<Format> format;
  const bool found =
      read_records(dir / (split + ".jsonl"), [&](const auto& record, const std::string& where) {
        if (!format) format = format_of(record, where);
        examples.push_back(example_of(runtime, record, *format, mask_prompt, where));
      });
  if (!found) return std::nullopt;
  return examples;
}

std::optional<std::vector<TrainingExample>> load_preference_split(const ModelRuntime& runtime,
                                                                  const std::filesystem::path& dir,
                                                                  const std::string& split) {
  if (!runtime.has_chat_template())
    throw Error("preference records need the model's chat template, and it has none");
  std::vector<TrainingExample> examples;
  const bool found =
      read_records(dir / (split + ".jsonl"), [&](const auto& record, const std::string& where) {
        auto text_field = [&](const char* key) {
          if (!record.contains(key) || !record[key].is_string())
            throw Error(where + ": preference records need \"" + key + "\" as a string");
          return record[key].template get<std::string>();
        };
        auto prompt = nlohmann::ordered_json::array();
        if (record.contains("system"))
          prompt.push_back({{"role", "system"}, {"content", text_field("system")}});
        prompt.push_back({{"role", "user"}, {"content", text_field("prompt")}});
        const auto none = nlohmann::ordered_json();
        const int offset = static_cast<int>(templated(runtime, prompt, none, true).size());
        for (const char* answer : {"chosen", "rejected"}) {
          auto messages = prompt;
          messages.push_back({{"role", "assistant"}, {"content", text_field(answer)}});
          TrainingExample example;
          example.tokens = templated(runtime, messages, none, false);
          example.offset = offset;
          example.fields = static_cast<int>(record.size());
          examples.push_back(std::move(example));
        }
      });
  if (!found) return std::nullopt;
  return examples;
}

TrainingBatches::TrainingBatches(const std::vector<TrainingExample>& examples, int batch_size,
                                 int max_seq_length, NumpyRandom& random, bool loop)
    : examples_(examples),
      batch_size_(batch_size),
      max_seq_length_(max_seq_length),
      random_(random),
      loop_(loop) {
  if (static_cast<int>(examples.size()) < batch_size)
    throw Error("the data must have at least batch_size=" + std::to_string(batch_size) +
                " examples but only has " + std::to_string(examples.size()));
  // mlx-lm sorts by the record's field count (stably), then cuts batches.
  std::vector<int> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return examples[a].fields < examples[b].fields; });
  for (std::size_t i = 0; i + batch_size <= order.size(); i += batch_size)
    batches_.emplace_back(order.begin() + i, order.begin() + i + batch_size);
}

std::optional<TrainingBatch> TrainingBatches::next() {
  if (!started_ || position_ == order_.size()) {
    if (started_ && !loop_) return std::nullopt;
    order_ = random_.permutation(static_cast<int>(batches_.size()));
    position_ = 0;
    started_ = true;
  }
  return make(batches_[order_[position_++]]);
}

TrainingBatch TrainingBatches::make(const std::vector<int>& members) {
  constexpr int kPadTo = 32;
  int longest = 0;
  for (int member : members)
    longest = std::max(longest, static_cast<int>(examples_[member].tokens.size()));
  const int width = std::min(1 + kPadTo * ((longest + kPadTo - 1) / kPadTo), max_seq_length_);
  std::vector<int> tokens(static_cast<std::size_t>(batch_size_) * width, 0);
  std::vector<int> lengths;
  for (int row = 0; row < batch_size_; ++row) {
    const auto& example = examples_[members[row]];
    const int length = std::min(static_cast<int>(example.tokens.size()), max_seq_length_);
    if (length < static_cast<int>(example.tokens.size())) ++truncated_;
    std::copy_n(example.tokens.begin(), length, tokens.begin() + std::size_t(row) * width);
    lengths.push_back(example.offset);
    lengths.push_back(length);
  }
  return {mx::array(tokens.data(), {batch_size_, width}, mx::int32),
          mx::array(lengths.data(), {batch_size_, 2}, mx::int32)};
}

}  // namespace mlx_cpp
