#pragma once
// What the engine sees of a model: a forward pass over token ids with
// per-layer caches, and the caches the model wants. Dedicated graphs and the
// generic dense transformer both implement this.
#include <mlx/array.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/adapter_files.h"
#include "model/adapter_sites.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/transformer_spec.h"

namespace mlx_cpp {

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  // tokens: int32 [B, L] → logits [B, L, vocab]. Caches are updated in
  // place. `adapters`: the stack every row runs with (none: the base).
  virtual mlx::core::array forward(const mlx::core::array& tokens, CacheList& caches,
                                   const AdapterStack* adapters = nullptr) const = 0;
  // tokens: int32 [B, 1], one token of each row → logits [B, 1, vocab].
  // Each row's caches are updated in place, each row runs its own adapters.
  virtual mlx::core::array forward_batch(const mlx::core::array& tokens,
                                         const ForwardBatch& batch) const = 0;
  virtual CacheList make_caches() const = 0;
  // One block of a training forward: hidden [B, L, hidden] and the stack
  // its projections run with → the block's output. Each call starts from
  // empty caches, so it may be called again to recompute the same values.
  using TrainingBlock =
      std::function<mlx::core::array(const mlx::core::array&, const AdapterStack*)>;
  // How a training forward runs block `layer` on `hidden`: by calling
  // `block` (with the forward's stack, or one whose factors are the same
  // values traced otherwise), e.g. inside mlx::core::checkpoint.
  using TrainingBlockRunner = std::function<mlx::core::array(
      int layer, const mlx::core::array& hidden, const TrainingBlock& block)>;
  // tokens: int32 [B, L], whole sequences from empty caches → logits
  // [B, L, vocab], the values forward gives them. `run_block` (empty: each
  // block called directly) sees every block; a model that cannot hand out
  // its blocks throws Error when given one.
  virtual mlx::core::array training_forward(const mlx::core::array& tokens,
                                            const AdapterStack* adapters,
                                            const TrainingBlockRunner& run_block = {}) const;
  // tokens: int32 [B, L], whole sequences → the final-normed hidden states
  // [B, L, hidden], with no cache: each token attends as the model's
  // attention does (both ways in an encoder, to the left otherwise). What
  // embeddings are pooled from. `lengths` (one per row, empty: all L): rows
  // padded on the right, whose keys past their length no token sees (the
  // padding's own states are to be ignored).
  virtual mlx::core::array hidden_states(const mlx::core::array& tokens,
                                         const std::vector<int>& lengths = {}) const = 0;
  // An encoder: its attention reads both ways, so it makes hidden states
  // for embeddings and cannot generate text.
  virtual bool bidirectional() const { return false; }
  // An adapter directory's tensors placed on this model's projections
  // (model/adapter_binding.h), under `name`; throws Error when they do not
  // fit it.
  virtual std::shared_ptr<const BoundAdapter> bind_adapter(const AdapterFiles& files,
                                                           const std::string& name) const = 0;
  // Its adapter sites (the projections an adapter can change).
  virtual const AdapterSites& adapter_sites() const = 0;
  // Why adapters cannot be trained on it here, or nullopt when they can.
  virtual std::optional<std::string> adapter_training_refusal() const = 0;
  virtual const std::string& model_type() const = 0;
  // Which part of mlx-cpp serves it: "dedicated" (a graph of its own) or
  // "generic" (the descriptor table's dense graph).
  virtual std::string tier() const = 0;
  // Whether some layers route tokens to experts.
  virtual bool mixture_of_experts() const { return false; }
  virtual int vocab_size() const = 0;
  // Why this model's attention cannot read keys and values quantized this
  // way (model/quantized_kv_cache.h), or nullopt when it can.
  virtual std::optional<std::string> quantized_kv_refusal(
      const KvQuantization& quantization) const = 0;
  // Parameter count as mlx-lm reports it (quantized weights at full size).
  virtual size_t parameter_count() const = 0;
  // Bytes of parameters one decode step reads, as held in memory: every
  // layer and the output head; of the input embedding only its one row,
  // which is left out (a tied head counts the whole table).
  virtual size_t weight_bytes_per_token() const = 0;
  // Bytes of all parameters as held in memory.
  virtual size_t weight_bytes() const = 0;
};

struct LoadedModel {
  std::unique_ptr<LanguageModel> model;
  nlohmann::json config;  // config.json after text_config merge + generation_config eos
  std::vector<int> eos_token_ids;
  std::filesystem::path directory;
};

struct LoadOptions {
  KernelMode kernels = KernelMode::stock;
  // Fast kernels only: a decode step runs each block that allows it as one
  // graph node (model/fused_decode_block.h), with the same results.
  bool fused_decode = true;
};

// config.json with a nested text_config (multimodal wrappers) flattened so
// the text model's fields win, and generation_config.json's eos_token_id
// replacing the config's, as mlx-lm's load_config does.
nlohmann::json read_model_config(const std::filesystem::path& directory);

// Loads config.json (+ generation_config.json) and the weights of an MLX
// checkpoint directory, audits the weights, and returns the model. Throws
// Error with a one-line message on any problem.
LoadedModel load_model(const std::filesystem::path& directory, const LoadOptions& options = {});

}  // namespace mlx_cpp
