#include "engine/model_runtime.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "io/error.h"
#include "io/json_file.h"
#include "template/model_chat_template.h"

namespace mlx_cpp {

std::unique_ptr<ModelRuntime> ModelRuntime::open(const std::filesystem::path& directory,
                                                 const RuntimeOptions& options) {
  auto runtime = for_token_ids(load_model(directory, {options.kernels}), options);
  runtime->tokenizer_ = Tokenizer::from_directory(directory);
  runtime->directory_ = directory;
  // The template and its special tokens come from the same loader the
  // `template` command uses, so both render the same prompt.
  if (!options.chat_template_file.empty()) {
    runtime->template_source_ = read_chat_template_file(options.chat_template_file);
    runtime->template_special_tokens_ = load_model_special_tokens(directory);
  } else if (!runtime->tokenizer_->chat_template().empty()) {
    auto model_template = load_model_chat_template(directory);
    runtime->template_source_ = std::move(model_template.source);
    runtime->template_special_tokens_ = std::move(model_template.special_tokens);
  }
  if (!runtime->template_source_.empty()) {
    runtime->chat_template_ = std::make_unique<ChatTemplate>(runtime->template_source_);
    runtime->check_template_renders();
  }
  auto generation_path = directory / "generation_config.json";
  runtime->generation_config_ = std::filesystem::exists(generation_path)
                                    ? read_json_file(generation_path)
                                    : nlohmann::json::object();
  // As mlx-lm: the config's EOS ids, or the tokenizer's when it has none.
  if (runtime->eos_token_ids_.empty() && runtime->tokenizer_->eos_token_id())
    runtime->eos_token_ids_.push_back(*runtime->tokenizer_->eos_token_id());
  runtime->find_output_format(options.tool_call_format);
  return runtime;
}

void ModelRuntime::check_template_renders() const {
  const nlohmann::ordered_json plain = {{{"role", "user"}, {"content", "Hello"}}};
  try {
    render_chat(plain, nullptr, /*add_generation_prompt=*/true, {});
  } catch (const Error& error) {
    throw Error("the chat template cannot render a plain conversation (one user message): " +
                std::string(error.what()) + "; --chat-template-file gives another");
  }
}

void ModelRuntime::find_output_format(const std::string& tool_call_format) {
  chat::OutputFormatSources sources;
  sources.chat_template = chat_template_.get();
  sources.template_source = template_source_;
  sources.template_variables = template_special_tokens_;
  sources.is_token = [this](std::string_view token) {
    return tokenizer_->token_to_id(token).has_value();
  };
  output_format_ = chat::detect_output_format(sources);
  if (tool_call_format == "none")
    output_format_.tool_calls = nullptr;
  else if (!tool_call_format.empty())
    output_format_.tool_calls = &chat::tool_call_format(tool_call_format);
  keep_marker_tokens();
}

const grammar::GrammarVocabulary& ModelRuntime::grammar_vocabulary() const {
  if (!tokenizer_) throw Error("[grammar] a model without a tokenizer cannot follow a grammar");
  std::call_once(grammar_once_, [this] {
    std::ifstream file(directory_ / "tokenizer.json");
    std::stringstream text;
    text << file.rdbuf();
    grammar_vocabulary_ = std::make_unique<grammar::GrammarVocabulary>(
        *tokenizer_, text.str(), model().vocab_size(), eos_token_ids_, kept_special_tokens_);
  });
  return *grammar_vocabulary_;
}

void ModelRuntime::keep_marker_tokens() {
  kept_special_tokens_.clear();
  for (const auto& marker : output_format_.marker_tokens()) {
    auto id = tokenizer_->token_to_id(marker);
    if (id && tokenizer_->is_special_token(*id)) kept_special_tokens_.insert(*id);
  }
}

std::unique_ptr<ModelRuntime> ModelRuntime::for_token_ids(LoadedModel loaded,
                                                          const RuntimeOptions& options) {
  if (loaded.model->bidirectional())
    throw Error(loaded.directory.string() +
                " holds an embedding encoder (its attention reads both ways): it makes "
                "embeddings, not text; use `mlx-cpp embed` or `mlx-cpp serve` "
                "(POST /v1/embeddings)");
  std::unique_ptr<ModelRuntime> runtime(new ModelRuntime());
  runtime->loaded_ = std::move(loaded);
  runtime->kernels_ = options.kernels;
  runtime->generation_config_ = nlohmann::json::object();
  runtime->eos_token_ids_ = runtime->loaded_.eos_token_ids;
  const int model_context = runtime->loaded_.config.value("max_position_embeddings", 4096);
  runtime->context_size_ = options.context_size > 0 ? options.context_size : model_context;
  return runtime;
}

GenerationOptions ModelRuntime::default_options() const {
  GenerationOptions options;
  const auto& config = generation_config_;
  auto number = [&](const char* key) -> std::optional<double> {
    if (config.contains(key) && config[key].is_number()) return config[key].get<double>();
    return std::nullopt;
  };
  bool sample = config.value("do_sample", true);
  if (auto value = number("temperature"); value && sample) options.sampler.temperature = *value;
  if (auto value = number("top_p")) options.sampler.top_p = float(*value);
  if (auto value = number("top_k")) options.sampler.top_k = int(*value);
  if (auto value = number("min_p")) options.sampler.min_p = float(*value);
  if (auto value = number("repetition_penalty"); value && *value != 1.0)
    options.penalties.repetition_penalty = float(*value);
  if (options.sampler.top_k >= model().vocab_size()) options.sampler.top_k = 0;
  return options;
}

std::vector<int> ModelRuntime::encode(const std::string& text, bool add_special_tokens) const {
  if (!tokenizer_) throw Error("this model was opened without a tokenizer");
  return tokenizer_->encode(text, add_special_tokens);
}

std::string ModelRuntime::decode(const std::vector<int>& ids) const {
  if (!tokenizer_) return "";
  return tokenizer_->decode(std::vector<TokenId>(ids.begin(), ids.end()), false);
}

std::string ModelRuntime::render_chat(const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools,
                                      bool add_generation_prompt,
                                      const nlohmann::ordered_json& extra) const {
  if (!chat_template_)
    throw Error("this model has no chat template (tokenizer_config.json chat_template)");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  if (!tools.is_null()) context["tools"] = tools;
  context["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [key, value] : template_special_tokens_.items()) context[key] = value;
  if (extra.is_object())
    for (const auto& [key, value] : extra.items()) context[key] = value;
  return chat_template_->render(context);
}

std::string ModelRuntime::render_continued(const nlohmann::ordered_json& messages) const {
  // transformers marks the end of the last message with a tag, renders,
  // and cuts the text at the tag (and the spacing before it, where the
  // template trimmed the tag's own).
  static const std::string kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  if (!messages.is_array() || messages.empty() || !messages.back().contains("content") ||
      !messages.back()["content"].is_string())
    throw Error("continuing a message needs a last message with text content");
  auto tagged = messages;
  const std::string content = messages.back()["content"].get<std::string>();
  tagged.back()["content"] = content + kTag;
  const std::string rendered = render_chat(tagged, nullptr, /*add_generation_prompt=*/false);
  const std::string bare_tag = kTag.substr(0, kTag.size() - 1);
  const auto at = rendered.rfind(bare_tag);
  if (at == std::string::npos)
    throw Error("the chat template drops part of the message, so it cannot be continued");
  if (rendered.compare(at, kTag.size(), kTag) == 0) return rendered.substr(0, at);
  auto end = at;
  while (end > 0 && std::string_view(" \t\n\r\f\v").find(rendered[end - 1]) != std::string::npos)
    --end;
  return rendered.substr(0, end);
}

std::vector<int> ModelRuntime::encode_user_message_continuation(const std::string& text,
                                                                const std::string& system) const {
  // Rendered once with the text and once with a marker in its place: the
  // two agree up to where the text starts.
  static const std::string kMarker = "<query>";
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", text}});
  const std::string rendered = render_chat(messages, nullptr, true);
  messages.back()["content"] = kMarker;
  const std::string marked = render_chat(messages, nullptr, true);
  const auto start = marked.find(kMarker);
  if (start == std::string::npos || start > rendered.size())
    throw Error("the chat template drops the user message's text");
  return encode(rendered.substr(start), false);
}

std::vector<int> ModelRuntime::encode_user_message(const std::string& text,
                                                   const std::string& system) const {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", text}});
  return encode(render_chat(messages, nullptr, true), false);
}

}  // namespace mlx_cpp
