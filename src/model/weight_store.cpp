#include "model/weight_store.h"

#include <mlx/dtype_utils.h>
#include <mlx/ops.h>
#include <mlx/utils.h>

#include <algorithm>
#include <sstream>

#include "io/error.h"
#include "io/safetensors_file.h"

namespace mlx_cpp {

std::string dtype_name(mlx::core::Dtype dtype) {
  std::ostringstream text;
  text << dtype;
  return text.str();
}

std::string describe_shape(const mlx::core::Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

WeightStore WeightStore::from_directory(const std::filesystem::path& directory) {
  std::map<std::string, mlx::core::array> tensors;
  for (const auto& file : find_weight_files(directory)) {
    for (auto& [name, tensor] : load_safetensors_checked(file)) {
      if (tensors.count(name)) throw Error("tensor '" + name + "' appears in two weight files");
      tensors.emplace(name, std::move(tensor));
    }
  }
  return WeightStore(std::move(tensors));
}

WeightStore::WeightStore(std::map<std::string, mlx::core::array> tensors)
    : tensors_(std::move(tensors)) {}

const mlx::core::array* WeightStore::find(const std::string& name) const {
  auto found = tensors_.find(name);
  return found == tensors_.end() ? nullptr : &found->second;
}

mlx::core::array WeightStore::take(const std::string& name,
                                   const std::optional<mlx::core::Shape>& expected_shape,
                                   DtypeRule dtype_rule) {
  auto tensor = take_if_present(name, expected_shape, dtype_rule);
  if (tensor) return *tensor;
  problems_.push_back("missing " + name);
  return mlx::core::array(0.0f);
}

std::optional<mlx::core::array> WeightStore::take_if_present(
    const std::string& name, const std::optional<mlx::core::Shape>& expected_shape,
    DtypeRule dtype_rule) {
  auto found = tensors_.find(name);
  if (found == tensors_.end()) return std::nullopt;
  consumed_.insert(name);
  if (expected_shape && found->second.shape() != *expected_shape)
    problems_.push_back(name + " has shape " + describe_shape(found->second.shape()) +
                        ", expected " + describe_shape(*expected_shape));
  const auto dtype = found->second.dtype();
  const bool dtype_ok = dtype_rule == DtypeRule::packed_uint32
                            ? dtype == mlx::core::uint32
                            : mlx::core::issubdtype(dtype, mlx::core::floating);
  if (!dtype_ok)
    problems_.push_back(name + " has dtype " + dtype_name(dtype) + ", expected " +
                        (dtype_rule == DtypeRule::packed_uint32 ? "uint32" : "a float type"));
  // The model owns the tensor from here: a layer that replaces it with a
  // copy in its own layout frees the original at once, not when loading
  // ends (SmolLM2's row-interleaved copies had raised the peak by 25 MB).
  auto tensor = std::move(found->second);
  found->second = mlx::core::array(0.0f);
  return tensor;
}

void WeightStore::discard(const std::string& name) {
  if (tensors_.count(name)) consumed_.insert(name);
}

namespace {

// Adds a tensor under the name the model reads it by; a second tensor read
// by the same name is an error, never a silent choice between the two.
void insert_once(std::map<std::string, mlx::core::array>& tensors, const std::string& name,
                 const mlx::core::array& tensor, const std::string& source) {
  if (!tensors.emplace(name, tensor).second)
    throw Error("checkpoint: two tensors are both read as '" + name + "' (one is " + source + ")");
}

}  // namespace

void WeightStore::strip_prefix(const std::string& prefix) {
  rename([&prefix](const std::string& name) {
    return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  });
}

void WeightStore::rename(const std::function<std::string(const std::string&)>& rename) {
  std::map<std::string, mlx::core::array> renamed;
  for (auto& [name, tensor] : tensors_) insert_once(renamed, rename(name), tensor, name);
  tensors_ = std::move(renamed);
}

void WeightStore::split_rows(const std::string& fused,
                             const std::vector<std::pair<std::string, int>>& parts, int groups) {
  namespace mx = mlx::core;
  const std::string marker = "." + fused + ".";
  int per_group = 0;
  for (const auto& part : parts) per_group += part.second;
  std::map<std::string, mx::array> result;
  for (auto& [name, tensor] : tensors_) {
    auto found = name.find(marker);
    if (found == std::string::npos) {
      insert_once(result, name, tensor, name);
      continue;
    }
    if (tensor.ndim() < 1 || tensor.shape(0) != groups * per_group)
      throw Error("checkpoint: " + name + " has " + describe_shape(tensor.shape()) + ", expected " +
                  std::to_string(groups * per_group) + " rows to split");
    // [groups, per_group, ...]: each part takes its rows of every group;
    // parts of one name join in order.
    auto grouped_shape = tensor.shape();
    grouped_shape[0] = per_group;
    grouped_shape.insert(grouped_shape.begin(), groups);
    auto grouped = mx::reshape(tensor, grouped_shape);
    std::vector<std::pair<std::string, std::vector<mx::array>>> pieces;
    int start = 0;
    for (const auto& [part, rows] : parts) {
      auto begin = mx::Shape(grouped.ndim(), 0);
      auto stop = grouped.shape();
      begin[1] = start;
      stop[1] = start + rows;
      auto part_shape = tensor.shape();
      part_shape[0] = groups * rows;
      auto rows_of_part = mx::slice(grouped, begin, stop);
      if (groups > 1) rows_of_part = mx::contiguous(rows_of_part);
      auto same = std::find_if(pieces.begin(), pieces.end(),
                               [&part = part](const auto& piece) { return piece.first == part; });
      if (same == pieces.end()) same = pieces.insert(pieces.end(), {part, {}});
      same->second.push_back(mx::reshape(rows_of_part, part_shape));
      start += rows;
    }
    for (auto& [part, arrays] : pieces) {
      auto split_name = name;
      split_name.replace(found + 1, fused.size(), part);
      insert_once(result, split_name,
                  arrays.size() == 1 ? arrays.front() : mx::concatenate(arrays, 0), name);
    }
  }
  tensors_ = std::move(result);
}

void WeightStore::discard_prefix(const std::string& prefix) {
  for (const auto& [name, tensor] : tensors_)
    if (name.rfind(prefix, 0) == 0) consumed_.insert(name);
}

void WeightStore::audit() const {
  std::vector<std::string> report = problems_;
  for (const auto& [name, tensor] : tensors_)
    if (!consumed_.count(name)) report.push_back("unused " + name);
  if (report.empty()) return;
  std::string text;
  const size_t shown = std::min<size_t>(report.size(), 12);
  for (size_t i = 0; i < shown; ++i) text += (i ? "; " : "") + report[i];
  if (report.size() > shown) text += "; ... (" + std::to_string(report.size() - shown) + " more)";
  throw Error("weight audit failed: " + text);
}

}  // namespace mlx_cpp
