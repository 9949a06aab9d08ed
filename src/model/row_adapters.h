#pragma once
// Low-rank adapters as the layers apply them: each adaptable projection of
// a model (a Linear or a SwitchLinear) has a site number, an adapter bound
// to the model holds an update per site it changes, and a forward carries,
// per row of its batch, the stack of adapters that row runs with (none:
// the base model). The base projection runs once for every row; each
// row's updates are added to its own rows, computed as mlx-lm's LoRALinear,
// DoRALinear and LoRASwitchLinear compute them, so a row's results are the
// ones it gets alone.
#include <mlx/array.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace mlx_cpp {

// One projection's update in one adapter. Linear: a [in, r], b [r, out];
// switch (a stack of experts): a [experts, r, in], b [experts, out, r].
struct LowRankUpdate {
  mlx::core::array a;
  mlx::core::array b;
  float scale = 1.0f;
  // For the fast path's kernel (kernels::low_rank_update_fast): aᵀ
  // [r, in] and b in float32, contiguous (linear updates only).
  mlx::core::array a_t32 = mlx::core::array(0.0f);
  mlx::core::array b32 = mlx::core::array(0.0f);
  // DoRA (linear only): the base weight as the stock op multiplies it,
  // [out, in] (quantized weights dequantized), and m / ||W + scale·bᵀaᵀ||
  // per output row in float32 (constant, so computed once at bind time).
  struct Dora {
    mlx::core::array weight;
    mlx::core::array magnitude_ratio;
  };
  std::optional<Dora> dora;
  // Training only: LoRALinear's dropout of x before the low-rank product
  // (the probability of zeroing an entry; 0: none), drawn from MLX's
  // global generator as mlx-lm draws it, on the stock path.
  double dropout = 0.0;
};

// One update in a row's stack, with the factor it is added with (the
// adapter's scale times the stack's weight for that adapter).
struct StackedUpdate {
  const LowRankUpdate* update = nullptr;
  float scale = 1.0f;
};

// A model's adapter bound to it: an update per site it changes.
struct BoundAdapter {
  std::string name;
  std::string directory;
  std::string fine_tune_type;  // "lora" or "dora"
  std::string fingerprint;     // of its files (AdapterFiles::fingerprint)
  int rank = 0;
  float scale = 1.0f;
  std::vector<std::optional<LowRankUpdate>> by_site;
  size_t bytes = 0;  // of its tensors as held
};

// The adapters one row runs with, in the order their updates are added.
class AdapterStack {
 public:
  struct Entry {
    std::shared_ptr<const BoundAdapter> adapter;
    float weight = 1.0f;
  };
  // Throws Error when DoRA is stacked with another adapter or weighted (its
  // magnitude rescales the whole output, so neither has a meaning mlx-lm
  // gives it).
  explicit AdapterStack(std::vector<Entry> entries);

  const std::vector<StackedUpdate>& at(int site) const;
  const std::vector<Entry>& entries() const { return entries_; }
  // What a prefix-cache entry is keyed by: each adapter's name, the
  // fingerprint of its files and its weight, in order.
  const std::string& identity() const { return identity_; }

 private:
  std::vector<Entry> entries_;
  std::vector<std::vector<StackedUpdate>> by_site_;
  std::string identity_;
};

// Per row of a forward's batch, the row's stack or null for the base model.
struct RowAdapters {
  std::vector<const AdapterStack*> rows;

  static RowAdapters single(const AdapterStack* stack) { return {{stack}}; }
  bool any() const;
  // Whether every row runs with the same stack for `site`.
  bool uniform_at(int site) const;
  // Whether every row runs the same updates on every site of `sites`.
  bool uniform_over(const std::vector<int>& sites) const;

  // A linear projection's output y [B, L, out] of x [B, L, in] with each
  // row's updates at `site` added (DoRA: recomputed from its base weight,
  // then `bias` added as DoRALinear does). Stock: mlx-lm's ops per group
  // of rows that share their updates. fast: one kernel node for all rows
  // (kernels::low_rank_update_fast), DoRA rows still by ops.
  mlx::core::array apply_linear(int site, const mlx::core::array& x, mlx::core::array y,
                                const std::optional<mlx::core::array>& bias,
                                bool fast = false) const;
  // The fast path's terms for `site` on rows of `length` tokens each:
  // factor pairs (a_t32, b32) and a term per row and update; rows whose
  // update is DoRA are left to the ops (the kernel adds plain low-rank
  // products only).
  struct KernelTerms {
    std::vector<mlx::core::array> factors;
    std::vector<kernels::LowRankTerm> terms;
    std::vector<bool> dora_rows;
  };
  KernelTerms kernel_terms(int site, int length) const;
  // A switch projection's output y of x at the chosen experts; every row
  // runs the same stack here (callers split mixed batches by rows first).
  mlx::core::array apply_switch(int site, const mlx::core::array& x, mlx::core::array y,
                                const mlx::core::array& indices, bool sorted_indices) const;

  // f(x) for a function of rows that needs one stack for all of them: run
  // per group of rows that share their updates on `sites` (rows gathered,
  // results put back in place); a uniform batch is one call.
  mlx::core::array by_row_groups(
      const std::vector<int>& sites, const mlx::core::array& x,
      const std::function<mlx::core::array(const mlx::core::array&, const RowAdapters&)>& f) const;
};

}  // namespace mlx_cpp
