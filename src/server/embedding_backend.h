#pragma once
// The backend of a server whose model is an embedding model: it answers
// POST /v1/embeddings (run on the engine thread between steps) and refuses
// generation with a message that says so.
#include <memory>

#include "engine/embedding_runtime.h"
#include "server/backend.h"

namespace mlx_cpp::server {

class EmbeddingBackend : public Backend {
 public:
  explicit EmbeddingBackend(std::unique_ptr<EmbeddingRuntime> runtime)
      : runtime_(std::move(runtime)) {}
  int context_size() const override { return runtime_->max_tokens(); }
  int vocab_size() const override { return runtime_->model().vocab_size(); }
  GenerationOptions default_options() const override { return {}; }
  nlohmann::ordered_json architecture() const override {
    return {{"model_type", runtime_->model().model_type()},
            {"tier", runtime_->model().tier()},
            {"mixture_of_experts", false}};
  }
  std::shared_ptr<const grammar::CompiledGrammar> compile_grammar(
      const grammar::GrammarSpec&) const override {
    throw refusal();
  }
  std::vector<int> encode(const std::string& text, bool add_special_tokens) const override {
    return runtime_->tokenizer().encode(text, add_special_tokens);
  }
  std::string decode(const std::vector<int>& ids) const override {
    return runtime_->tokenizer().decode(ids, /*skip_special_tokens=*/true);
  }
  std::string render_chat(const nlohmann::ordered_json&, const nlohmann::ordered_json&,
                          const nlohmann::ordered_json&) const override {
    throw refusal();
  }
  int embedding_dimension() const override { return runtime_->dimension(); }
  std::vector<int> embedding_ids(const std::string& text,
                                 const std::string& prompt_name) const override {
    return runtime_->tokenize(text, prompt_name);
  }
  void check_embedding_input(const std::vector<int>& ids) const override {
    runtime_->check_input(ids);
  }
  std::vector<std::vector<float>> embed(const std::vector<std::vector<int>>& inputs) override {
    return runtime_->embed_all(inputs);
  }
  SequenceId submit(TextRequest, SequenceSink) override { throw refusal(); }
  void cancel(SequenceId) override {}
  bool has_work() const override { return false; }
  void step() override {}
  SchedulerCounts counts() const override {
    SchedulerCounts counts;
    counts.weight_bytes = runtime_->model().weight_bytes();
    return counts;
  }

 private:
  static Error refusal() {
    return Error("the served model is an embedding model: it answers POST /v1/embeddings only");
  }
  std::unique_ptr<EmbeddingRuntime> runtime_;
};

}  // namespace mlx_cpp::server
