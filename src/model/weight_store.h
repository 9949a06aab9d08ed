#pragma once
// All tensors of a checkpoint, with bookkeeping for the load-time audit:
// every tensor in the files must be consumed by the model and every tensor
// the model expects must be present with the expected shape; otherwise
// audit() fails naming them all.
#include <mlx/array.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlx_cpp {

// What a tensor's dtype must be: dense weights and norms are floating point,
// packed quantized weights are uint32.
enum class DtypeRule { floating, packed_uint32 };

class WeightStore {
 public:
  // Loads model*.safetensors of the directory (shards merged).
  static WeightStore from_directory(const std::filesystem::path& directory);
  explicit WeightStore(std::map<std::string, mlx::core::array> tensors);

  bool contains(const std::string& name) const { return tensors_.count(name) > 0; }
  const mlx::core::array* find(const std::string& name) const;

  // Takes a required tensor: the store keeps only its name (find() then
  // sees a placeholder), so the caller's array is the only reference. A
  // missing tensor or a shape different from `expected_shape` (when given)
  // is recorded for audit() and a placeholder is returned, so one load
  // reports every problem at once.
  mlx::core::array take(const std::string& name,
                        const std::optional<mlx::core::Shape>& expected_shape = std::nullopt,
                        DtypeRule dtype_rule = DtypeRule::floating);
  // Takes a tensor the model may or may not have.
  std::optional<mlx::core::array> take_if_present(
      const std::string& name, const std::optional<mlx::core::Shape>& expected_shape = std::nullopt,
      DtypeRule dtype_rule = DtypeRule::floating);
  // Discards a tensor the model knowingly ignores (e.g. rotary inv_freq).
  void discard(const std::string& name);
  // Renames tensors with the given prefix (e.g. "language_model."); a tensor
  // stored both with and without it is an error, as for rename().
  void strip_prefix(const std::string& prefix);
  // Renames every tensor through `rename`; two tensors given one name throw.
  void rename(const std::function<std::string(const std::string&)>& rename);
  // Splits every tensor of a module named `.fused.` along its first axis
  // into the parts' modules (rows each, in order): weights, scales, biases.
  // With groups > 1 the parts repeat once per group and each part takes its
  // rows from every group. Parts of one name join, in order, into one.
  void split_rows(const std::string& fused, const std::vector<std::pair<std::string, int>>& parts,
                  int groups = 1);
  // Discards every tensor whose name starts with `prefix`.
  void discard_prefix(const std::string& prefix);

  // Adds a problem the audit reports, found by the layer that read the
  // tensors (e.g. scales and biases of different dtypes).
  void report(std::string problem) { problems_.push_back(std::move(problem)); }
  bool has_problems() const { return !problems_.empty(); }

  // Throws Error listing missing, mismatched and unused tensors.
  void audit() const;

 private:
  std::map<std::string, mlx::core::array> tensors_;
  std::set<std::string> consumed_;
  std::vector<std::string> problems_;
};

std::string describe_shape(const mlx::core::Shape& shape);
// "bfloat16", "float32", ... as MLX prints a dtype.
std::string dtype_name(mlx::core::Dtype dtype);

}  // namespace mlx_cpp
