#pragma once
// What every request shares: the loaded model, its tokenizer, chat template
// and generation defaults. Read-only once open() returns, so any thread may
// tokenize or render a chat while the engine thread runs the model.
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "chat/output_format.h"
#include "engine/token_generator.h"
#include "grammar/token_grammar.h"
#include "model/language_model.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

struct RuntimeOptions {
  int context_size = 0;  // max prompt + completion tokens (0 = model's max_position_embeddings)
  KernelMode kernels = KernelMode::fast;  // stock: bit-exact with mlx-lm
  // The tool-call format answers are parsed in: empty to take the one the
  // chat template writes, "none" for none, or a name from
  // chat::tool_call_format_names().
  std::string tool_call_format;
  // A Jinja file that replaces the model's chat template (the model's
  // special tokens still apply); empty: the model's own.
  std::filesystem::path chat_template_file;
};

class ModelRuntime {
 public:
  // Opens a model directory (config, weights, tokenizer, template).
  static std::unique_ptr<ModelRuntime> open(const std::filesystem::path& directory,
                                            const RuntimeOptions& options = {});
  // A runtime over token ids only: no tokenizer or template, so results
  // carry ids and logprobs and their text is empty (a checkpoint without
  // tokenizer files, as the parity tests' tiny models are).
  static std::unique_ptr<ModelRuntime> for_token_ids(LoadedModel loaded,
                                                     const RuntimeOptions& options = {});

  const LanguageModel& model() const { return *loaded_.model; }
  const LoadedModel& loaded() const { return loaded_; }
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int context_size() const { return context_size_; }
  KernelMode kernels() const { return kernels_; }
  const std::vector<int>& eos_token_ids() const { return eos_token_ids_; }
  // Generation defaults from generation_config.json (temperature, top_p, top_k, ...).
  GenerationOptions default_options() const;

  std::vector<int> encode(const std::string& text, bool add_special_tokens) const;
  std::string decode(const std::vector<int>& ids) const;
  bool has_chat_template() const { return chat_template_ != nullptr; }
  // Renders the chat template with transformers' inputs (messages, tools,
  // add_generation_prompt, bos/eos tokens, extra kwargs).
  std::string render_chat(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
      bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;
  // The chat template rendered for one user message (and an optional
  // system message), tokenized without adding special tokens again (the
  // template writes them).
  std::vector<int> encode_user_message(const std::string& text,
                                       const std::string& system = "") const;
  // The chat template rendered with the last message left open for more
  // (transformers' continue_final_message): what mlx-lm's cache_prompt
  // keeps of a user message, the message's end and the reply's start left
  // for a later prompt.
  std::string render_continued(const nlohmann::ordered_json& messages) const;
  // As mlx-lm's generate --prompt-cache-file: the user message rendered
  // for a reply from where its text starts (what follows a cached prompt
  // that left a user message open), tokenized.
  std::vector<int> encode_user_message_continuation(const std::string& text,
                                                    const std::string& system = "") const;
  // How the model writes tool calls and reasoning (found at open, see
  // RuntimeOptions::tool_call_format; empty without a tokenizer).
  const chat::OutputFormat& output_format() const { return output_format_; }
  // Special tokens decoded into the text because the output parser reads
  // them (a format's markers); other special tokens are dropped.
  const std::unordered_set<TokenId>& kept_special_tokens() const { return kept_special_tokens_; }
  // The vocabulary as the grammar engine sees it, built on first use (a
  // second or so for a 150k vocabulary). Throws Error without a tokenizer.
  const grammar::GrammarVocabulary& grammar_vocabulary() const;

 private:
  ModelRuntime() = default;
  LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::string template_source_;  // the template's text, read for the output format
  nlohmann::ordered_json template_special_tokens_;  // bos/eos/unk/pad as template variables
  nlohmann::json generation_config_;
  chat::OutputFormat output_format_;
  std::filesystem::path directory_;
  mutable std::once_flag grammar_once_;
  mutable std::unique_ptr<grammar::GrammarVocabulary> grammar_vocabulary_;
  std::unordered_set<TokenId> kept_special_tokens_;
  // A template that fails on one user message would fail every chat:
  // the model is refused at load instead, naming the template's error.
  void check_template_renders() const;
  void find_output_format(const std::string& tool_call_format);
  void keep_marker_tokens();
  std::vector<int> eos_token_ids_;
  KernelMode kernels_ = KernelMode::fast;
  int context_size_ = 0;
};

}  // namespace mlx_cpp
