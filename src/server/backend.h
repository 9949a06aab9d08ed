#pragma once
// What the server asks of the engine. Tokenizing, detokenizing and chat
// rendering are thread-safe (HTTP threads call them directly); submit,
// cancel, step and stats belong to the engine thread alone.
// SchedulerBackend is the real engine (a ModelRuntime and a Scheduler);
// tests use a scripted fake, which keeps the HTTP layer testable without
// weights.
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/adapter_registry.h"
#include "engine/model_runtime.h"
#include "engine/scheduler.h"
#include "io/error.h"

namespace mlx_cpp::server {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int context_size() const = 0;
  virtual int vocab_size() const = 0;
  virtual GenerationOptions default_options() const = 0;
  // Whether a draft model is loaded (requests may then speculate with it).
  virtual bool has_draft_model() const { return false; }
  // How the model writes tool calls and reasoning (none known by default).
  virtual chat::OutputFormat output_format() const { return {}; }
  // {"model_type", "tier", "mixture_of_experts"} of the served model (null
  // where unknown).
  virtual nlohmann::ordered_json architecture() const { return nullptr; }
  // A grammar compiled against the model's vocabulary (thread-safe);
  // throws mlx_cpp::Error when it cannot be compiled.
  virtual std::shared_ptr<const grammar::CompiledGrammar> compile_grammar(
      const grammar::GrammarSpec& spec) const = 0;
  virtual std::vector<int> encode(const std::string& text, bool add_special_tokens) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual std::string render_chat(const nlohmann::ordered_json& messages,
                                  const nlohmann::ordered_json& tools,
                                  const nlohmann::ordered_json& template_kwargs) const = 0;

  // Embeddings (docs/server.md): an embedding model's vector size, 0 for a
  // model that generates text (which then makes no embeddings).
  virtual int embedding_dimension() const { return 0; }
  // A text's ids as the embedding model reads them, its named prompt
  // ("": none) before it (thread-safe).
  virtual std::vector<int> embedding_ids(const std::string&, const std::string&) const {
    throw Error("this model makes no embeddings");
  }
  // Throws Error when the model would refuse to embed these ids (empty,
  // too long, outside the vocabulary); thread-safe.
  virtual void check_embedding_input(const std::vector<int>&) const {
    throw Error("this model makes no embeddings");
  }
  // Engine thread only: the embeddings of inputs' ids, in order.
  virtual std::vector<std::vector<float>> embed(const std::vector<std::vector<int>>&) {
    throw Error("this model makes no embeddings");
  }

  // Engine thread only. submit throws mlx_cpp::Error for a request it
  // refuses (nothing is queued then); otherwise exactly one of the sink's
  // on_finish / on_error is called later, from step().
  virtual SequenceId submit(TextRequest request, SequenceSink sink) = 0;
  virtual void cancel(SequenceId id) = 0;
  virtual bool has_work() const = 0;
  virtual void step() = 0;
  // Sequences waiting, prefilling, decoding; caches in use (GET /stats).
  virtual SchedulerCounts counts() const = 0;
  // Puts every cached prompt on disk, where there is an SSD cache.
  virtual void flush_prompt_cache() {}

  // Adapters (docs/lora.md). adapters() and resolve_adapters() are
  // thread-safe; mount and unmount run on the engine thread. A backend
  // without an adapter registry refuses them.
  virtual std::vector<AdapterRegistry::Mounted> adapters() const { return {}; }
  virtual std::shared_ptr<const AdapterStack> resolve_adapters(
      const std::vector<AdapterChoice>& choices) const {
    if (choices.empty()) return nullptr;
    throw Error("this server serves no adapters");
  }
  virtual void mount_adapter(const std::string& name, const std::filesystem::path&) {
    throw Error("this server cannot mount adapter " + name);
  }
  virtual bool unmount_adapter(const std::string&) { return false; }
};

// Built on the engine thread (loading can take a while; /health says 503
// until it returns).
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

class SchedulerBackend : public Backend {
 public:
  // What requests get unless they say otherwise, beside the model's own
  // defaults.
  struct RequestDefaults {
    SpeculativeOptions speculative;
    KvCacheScheme kv_cache;
  };
  // Adapters mounted at start (serve --adapter NAME=DIR).
  using AdapterMounts = std::vector<std::pair<std::string, std::filesystem::path>>;
  // draft: the model that drafts for requests speculating with a draft
  // model (may be null).
  SchedulerBackend(std::unique_ptr<ModelRuntime> runtime, const SchedulerOptions& options,
                   std::unique_ptr<ModelRuntime> draft = nullptr,
                   const RequestDefaults& defaults = {}, const AdapterMounts& mounts = {})
      : runtime_(std::move(runtime)),
        draft_(std::move(draft)),
        defaults_(defaults),
        scheduler_(*runtime_, options, draft_.get()),
        adapters_(runtime_->model()) {
    validate_kv_cache_scheme(defaults_.kv_cache, runtime_->model());
    for (const auto& [name, directory] : mounts) adapters_.mount(name, directory);
    scheduler_.set_resident_bytes(adapters_.mounted_bytes());
  }
  int context_size() const override { return runtime_->context_size(); }
  int vocab_size() const override { return runtime_->model().vocab_size(); }
  GenerationOptions default_options() const override {
    auto options = runtime_->default_options();
    options.speculative = defaults_.speculative;
    options.kv_cache = defaults_.kv_cache;
    return options;
  }
  bool has_draft_model() const override { return draft_ != nullptr; }
  chat::OutputFormat output_format() const override { return runtime_->output_format(); }
  nlohmann::ordered_json architecture() const override {
    const auto& model = runtime_->model();
    return {{"model_type", model.model_type()},
            {"tier", model.tier()},
            {"mixture_of_experts", model.mixture_of_experts()}};
  }
  std::shared_ptr<const grammar::CompiledGrammar> compile_grammar(
      const grammar::GrammarSpec& spec) const override {
    return runtime_->grammar_vocabulary().compile(spec);
  }
  std::vector<int> encode(const std::string& text, bool add_special_tokens) const override {
    return runtime_->encode(text, add_special_tokens);
  }
  std::string decode(const std::vector<int>& ids) const override { return runtime_->decode(ids); }
  std::string render_chat(const nlohmann::ordered_json& messages,
                          const nlohmann::ordered_json& tools,
                          const nlohmann::ordered_json& template_kwargs) const override {
    return runtime_->render_chat(messages, tools, /*add_generation_prompt=*/true, template_kwargs);
  }
  SequenceId submit(TextRequest request, SequenceSink sink) override {
    return scheduler_.submit(std::move(request), std::move(sink));
  }
  void cancel(SequenceId id) override { scheduler_.cancel(id); }
  bool has_work() const override { return scheduler_.has_work(); }
  void step() override { scheduler_.step(); }
  void flush_prompt_cache() override { scheduler_.flush_prompt_cache(); }
  SchedulerCounts counts() const override { return scheduler_.counts(); }
  std::vector<AdapterRegistry::Mounted> adapters() const override { return adapters_.list(); }
  std::shared_ptr<const AdapterStack> resolve_adapters(
      const std::vector<AdapterChoice>& choices) const override {
    return adapters_.resolve(choices);
  }
  // Mounted adapters count against the memory budget; one that does not fit
  // is unmounted again and refused.
  void mount_adapter(const std::string& name, const std::filesystem::path& directory) override {
    adapters_.mount(name, directory);
    try {
      scheduler_.set_resident_bytes(adapters_.mounted_bytes());
    } catch (...) {
      adapters_.unmount(name);
      throw;
    }
  }
  bool unmount_adapter(const std::string& name) override {
    const bool removed = adapters_.unmount(name);
    scheduler_.set_resident_bytes(adapters_.mounted_bytes());
    return removed;
  }

 private:
  std::unique_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ModelRuntime> draft_;
  RequestDefaults defaults_;
  Scheduler scheduler_;
  AdapterRegistry adapters_;
};

}  // namespace mlx_cpp::server
