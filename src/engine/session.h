#pragma once
// The library's one-conversation face: a ModelRuntime and a Scheduler of
// one row. generate() submits one sequence and steps it to the end; the
// scheduler's prefix cache keeps the conversation, so the next call only
// prefills what is new. Not thread-safe: use it from one thread.
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runtime.h"
#include "engine/scheduler.h"
#include "engine/text_request.h"

namespace mlx_cpp {

struct SessionOptions {
  int context_size = 0;  // max prompt + completion tokens (0 = model's max_position_embeddings)
  KernelMode kernels = KernelMode::fast;  // stock: bit-exact with mlx-lm
  // A model that drafts for requests asking for speculative decoding with
  // a draft model (same vocabulary).
  std::optional<std::filesystem::path> draft_model;
  // A Jinja file that replaces the model's chat template.
  std::filesystem::path chat_template_file;
};

class Session {
 public:
  static std::unique_ptr<Session> open(const std::filesystem::path& directory,
                                       const SessionOptions& options = {});

  const ModelRuntime& runtime() const { return *runtime_; }
  const LanguageModel& model() const { return runtime_->model(); }
  const LoadedModel& loaded() const { return runtime_->loaded(); }
  const Tokenizer& tokenizer() const { return runtime_->tokenizer(); }
  int context_size() const { return runtime_->context_size(); }
  GenerationOptions default_options() const { return runtime_->default_options(); }
  const std::vector<int>& eos_token_ids() const { return runtime_->eos_token_ids(); }
  std::vector<int> encode(const std::string& text, bool add_special_tokens) const {
    return runtime_->encode(text, add_special_tokens);
  }
  std::string render_chat(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
      bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const {
    return runtime_->render_chat(messages, tools, add_generation_prompt, extra);
  }

  // Generates from the longest cached prefix of the prompt; on_chunk
  // returning false cancels.
  TextResult generate(const TextRequest& request,
                      const std::function<bool(const TextChunk&)>& on_chunk);
  void reset_cache() { scheduler_->prefix_cache().clear(); }

 private:
  Session() = default;
  std::unique_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ModelRuntime> draft_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace mlx_cpp
