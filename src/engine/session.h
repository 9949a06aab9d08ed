#pragma once
// A loaded model with its tokenizer and chat template, and one reusable
// conversation cache: text in, text out. Not thread-safe by design: one
// engine thread owns a Session (the server posts tasks to that thread).
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/token_generator.h"
#include "model/language_model.h"
#include "template/chat_template.h"
#include "template/model_chat_template.h"
#include "tokenizer/tokenizer.h"

namespace mlx_cpp {

struct TextRequest {
  std::vector<int> prompt_ids;  // already tokenized (see Session::encode / render_chat)
  GenerationOptions options;
  std::vector<std::string> stop;  // stop strings, matched on decoded text
  int top_logprobs = 0;           // alternatives per token to report (0 = none)
  bool logprobs = false;          // report the chosen token's logprob
};

struct TokenLogprob {
  int id = 0;
  std::string text;
  float logprob = 0;
};

// One streamed piece: text that is final (never contains a partial stop
// string, never broken UTF-8), with the tokens that produced it.
struct TextChunk {
  std::string text;
  std::vector<TokenLogprob> tokens;                     // chosen tokens, when logprobs
  std::vector<std::vector<TokenLogprob>> alternatives;  // per token, when top_logprobs > 0
};

struct TextResult {
  std::string text;
  std::vector<int> completion_ids;
  GenerationStats stats;
  std::string finish_reason;  // "stop" or "length" ("cancelled" when the callback stopped it)
  int cached_prompt_tokens = 0;
};

struct SessionOptions {
  int context_size = 0;  // max prompt + completion tokens (0 = model's max_position_embeddings)
  KernelMode kernels = KernelMode::fast;  // stock: bit-exact with mlx-lm
};

class Session {
 public:
  // Opens a model directory (config, weights, tokenizer, template).
  static std::unique_ptr<Session> open(const std::filesystem::path& directory,
                                       const SessionOptions& options = {});

  const LanguageModel& model() const { return *loaded_.model; }
  const LoadedModel& loaded() const { return loaded_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int context_size() const { return context_size_; }
  // Generation defaults from generation_config.json (temperature, top_p, top_k, ...).
  GenerationOptions default_options() const;

  std::vector<int> encode(const std::string& text, bool add_special_tokens) const;
  // Renders the chat template with transformers' inputs (messages, tools,
  // add_generation_prompt, bos/eos tokens, extra kwargs) and tokenizes it
  // without adding special tokens again.
  std::string render_chat(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
      bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  // Generates; reuses the conversation cache for the longest common token
  // prefix with the previous request. on_chunk returning false cancels.
  TextResult generate(const TextRequest& request,
                      const std::function<bool(const TextChunk&)>& on_chunk);
  void reset_cache();
  const std::vector<int>& eos_token_ids() const { return eos_token_ids_; }

  // Drops cached tokens beyond the common prefix with `prompt`; returns how
  // many prompt tokens the cache still holds (never all of them: the last
  // prompt token is always recomputed to produce logits).
  int reuse_cached_prefix(const std::vector<int>& prompt);

 private:
  Session() = default;
  LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  nlohmann::ordered_json template_special_tokens_;  // bos/eos/unk/pad as template variables
  nlohmann::json generation_config_;
  std::vector<int> eos_token_ids_;
  KernelMode kernels_ = KernelMode::fast;
  int context_size_ = 0;
  CacheList cache_;
  std::vector<int> cached_tokens_;  // tokens whose keys/values the cache holds
};

}  // namespace mlx_cpp
