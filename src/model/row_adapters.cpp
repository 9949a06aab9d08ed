#include "model/row_adapters.h"

#include <mlx/ops.h>
#include <mlx/random.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

const std::vector<StackedUpdate>& no_updates() {
  static const std::vector<StackedUpdate> none;
  return none;
}

// scale · z in z's dtype (a Python float times an array), cast to x's.
mx::array scaled_delta(const mx::array& z, float scale, mx::Dtype dtype) {
  return mx::astype(mx::multiply(mx::array(scale, z.dtype()), z), dtype);
}

// nn.Dropout(p) in training: (mask · x) · (1 / (1 − p)), the mask drawn
// as Bernoulli(1 − p) over x's shape; 1 − p and its inverse are taken in
// double, as Python takes them.
mx::array dropped_out(const mx::array& x, double p) {
  const double keep = 1.0 - p;
  auto mask = mx::random::bernoulli(mx::array(static_cast<float>(keep)), x.shape());
  return mx::multiply(mx::multiply(mask, x), mx::array(static_cast<float>(1.0 / keep), x.dtype()));
}

// LoRALinear: y + (scale · ((dropout(x) @ a) @ b)).astype(x.dtype).
// DoRALinear: (m / ||W'||) · (x @ Wᵀ + the same delta), then the bias.
mx::array add_update(const StackedUpdate& stacked, const mx::array& x, const mx::array& y,
                     const std::optional<mx::array>& bias) {
  const auto& update = *stacked.update;
  const auto input = update.dropout > 0.0 ? dropped_out(x, update.dropout) : x;
  auto delta =
      scaled_delta(mx::matmul(mx::matmul(input, update.a), update.b), stacked.scale, x.dtype());
  if (!update.dora) return mx::add(y, delta);
  auto out = mx::add(mx::matmul(x, mx::transpose(update.dora->weight)), delta);
  out = mx::multiply(mx::astype(update.dora->magnitude_ratio, x.dtype()), out);
  return bias ? mx::add(out, *bias) : out;
}

const std::vector<StackedUpdate>* updates_of(const AdapterStack* stack, int site) {
  if (!stack) return nullptr;
  const auto& updates = stack->at(site);
  return updates.empty() ? nullptr : &updates;
}

mx::array row_indices(const std::vector<int>& rows) {
  return mx::array(rows.data(), {static_cast<int>(rows.size())}, mx::int32);
}

}  // namespace

AdapterStack::AdapterStack(std::vector<Entry> entries) : entries_(std::move(entries)) {
  std::ostringstream identity;
  for (const auto& entry : entries_) {
    if (!entry.adapter) throw Error("adapter stack: an entry has no adapter");
    const bool dora = entry.adapter->fine_tune_type == "dora";
    if (dora && (entries_.size() > 1 || entry.weight != 1.0f))
      throw Error("adapter " + entry.adapter->name +
                  " is a DoRA adapter: it rescales the whole projection, so it is not stacked "
                  "with other adapters or weighted");
    if (identity.tellp() > 0) identity << "+";
    identity << entry.adapter->name << "@" << entry.adapter->fingerprint.substr(0, 16);
    if (entry.weight != 1.0f) identity << "*" << entry.weight;
    const auto& sites = entry.adapter->by_site;
    if (by_site_.size() < sites.size()) by_site_.resize(sites.size());
    for (std::size_t site = 0; site < sites.size(); ++site)
      if (sites[site]) by_site_[site].push_back({&*sites[site], sites[site]->scale * entry.weight});
  }
  identity_ = identity.str();
}

const std::vector<StackedUpdate>& AdapterStack::at(int site) const {
  if (site < 0 || static_cast<std::size_t>(site) >= by_site_.size()) return no_updates();
  return by_site_[site];
}

bool RowAdapters::any() const {
  return std::any_of(rows.begin(), rows.end(), [](const auto* stack) { return stack; });
}

bool RowAdapters::uniform_at(int site) const {
  return uniform_over({site});
}

bool RowAdapters::uniform_over(const std::vector<int>& sites) const {
  for (int site : sites) {
    for (const auto* stack : rows)
      if (updates_of(stack, site) != updates_of(rows.front(), site)) return false;
  }
  return true;
}

RowAdapters::KernelTerms RowAdapters::kernel_terms(int site, int length) const {
  KernelTerms result;
  result.dora_rows.assign(rows.size(), false);
  std::map<const LowRankUpdate*, int> pairs;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const auto* updates = updates_of(rows[row], site);
    if (!updates) continue;
    for (const auto& stacked : *updates) {
      if (stacked.update->dora) {  // never stacked (AdapterStack)
        result.dora_rows[row] = true;
        continue;
      }
      auto [found, added] = pairs.emplace(stacked.update, static_cast<int>(pairs.size()));
      if (added) {
        result.factors.push_back(stacked.update->a_t32);
        result.factors.push_back(stacked.update->b32);
      }
      const int first = static_cast<int>(row) * length;
      result.terms.push_back({first, first + length, found->second, stacked.scale});
    }
  }
  return result;
}

mx::array RowAdapters::apply_linear(int site, const mx::array& x, mx::array y,
                                    const std::optional<mx::array>& bias, bool fast) const {
  if (site < 0 || rows.empty()) return y;
  std::vector<bool> by_ops(rows.size(), true);
  if (fast) {
    auto kernel = kernel_terms(site, x.shape(1));
    if (!kernel.terms.empty())
      y = kernels::low_rank_update_fast(x, y, kernel.factors, kernel.terms);
    by_ops = kernel.dora_rows;
    if (std::none_of(by_ops.begin(), by_ops.end(), [](bool row) { return row; })) return y;
  }
  auto add_all = [&](const std::vector<StackedUpdate>& updates, const mx::array& xs, mx::array ys) {
    for (const auto& update : updates) ys = add_update(update, xs, ys, bias);
    return ys;
  };
  const bool all_by_ops = std::all_of(by_ops.begin(), by_ops.end(), [](bool row) { return row; });
  if (all_by_ops && uniform_at(site)) {
    const auto* updates = updates_of(rows.front(), site);
    return updates ? add_all(*updates, x, y) : y;
  }
  // Rows grouped by their updates; each group's rows taken out, updated as
  // a batch of their own and written back in place (copies, exact).
  std::map<const std::vector<StackedUpdate>*, std::vector<int>> groups;
  for (std::size_t row = 0; row < rows.size(); ++row)
    if (const auto* updates = updates_of(rows[row], site); updates && by_ops[row])
      groups[updates].push_back(static_cast<int>(row));
  for (const auto& [updates, members] : groups) {
    auto indices = row_indices(members);
    auto updated = add_all(*updates, mx::take(x, indices, 0), mx::take(y, indices, 0));
    y = mx::scatter(y, indices, mx::expand_dims(updated, 1), 0);
  }
  return y;
}

mx::array RowAdapters::apply_switch(int site, const mx::array& x, mx::array y,
                                    const mx::array& indices, bool sorted_indices) const {
  if (site < 0 || rows.empty()) return y;
  if (!uniform_at(site))
    throw std::logic_error("[apply_switch] rows with different adapters reached one expert call");
  const auto* updates = updates_of(rows.front(), site);
  if (!updates) return y;
  for (const auto& stacked : *updates) {
    const auto& update = *stacked.update;
    auto z =
        mx::gather_mm(x, mx::swapaxes(update.a, -1, -2), std::nullopt, indices, sorted_indices);
    z = mx::gather_mm(z, mx::swapaxes(update.b, -1, -2), std::nullopt, indices, sorted_indices);
    y = mx::add(y, scaled_delta(z, stacked.scale, x.dtype()));
  }
  return y;
}

mx::array RowAdapters::by_row_groups(
    const std::vector<int>& sites, const mx::array& x,
    const std::function<mx::array(const mx::array&, const RowAdapters&)>& f) const {
  if (uniform_over(sites)) return f(x, *this);
  std::map<std::vector<const std::vector<StackedUpdate>*>, std::vector<int>> groups;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    std::vector<const std::vector<StackedUpdate>*> signature;
    for (int site : sites) signature.push_back(updates_of(rows[row], site));
    groups[signature].push_back(static_cast<int>(row));
  }
  std::vector<mx::array> outputs;
  std::vector<int> order;
  for (const auto& [signature, members] : groups) {
    RowAdapters group;
    for (int row : members) group.rows.push_back(rows[row]);
    outputs.push_back(f(mx::take(x, row_indices(members), 0), group));
    order.insert(order.end(), members.begin(), members.end());
  }
  // Row r of the result is the group output at r's position in `order`.
  std::vector<int> position(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  return mx::take(mx::concatenate(outputs, 0), row_indices(position), 0);
}

}  // namespace mlx_cpp
