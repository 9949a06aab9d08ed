#pragma once
// Adapters mounted on a model by name, and the stacks requests ask for:
// "name", "a+b" (updates added in that order), "a*0.5+b" (a weight per
// adapter). Mounting reads and binds the directory (MLX work: on the
// engine thread, or before serving); looking names up is safe from any
// thread. An adapter unmounted while requests run with it stays alive
// until they end (they share it) and is refused to new requests at once.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/adapter_choice.h"
#include "io/error.h"
#include "model/language_model.h"

namespace mlx_cpp {

// A request named an adapter that is not mounted.
class AdapterNotFound : public Error {
 public:
  using Error::Error;
};

// The adapter directories given, stacked in order with weight 1, bound to
// the model (generate and chat's --adapter); named by their directories.
std::shared_ptr<const AdapterStack> load_adapter_stack(
    const LanguageModel& model, const std::vector<std::filesystem::path>& directories);

class AdapterRegistry {
 public:
  explicit AdapterRegistry(const LanguageModel& model) : model_(model) {}

  // Throws Error for a name in use, a bad name or a directory that does
  // not fit the model.
  void mount(const std::string& name, const std::filesystem::path& directory);
  // Whether it was mounted.
  bool unmount(const std::string& name);

  struct Mounted {
    std::shared_ptr<const BoundAdapter> adapter;
    // Requests holding it now (stacks in flight).
    long in_use = 0;
  };
  std::vector<Mounted> list() const;
  // The bytes of every mounted adapter's tensors.
  std::size_t mounted_bytes() const;
  // nullptr for an empty choice list; throws Error naming an adapter that
  // is not mounted.
  std::shared_ptr<const AdapterStack> resolve(const std::vector<AdapterChoice>& choices) const;

 private:
  const LanguageModel& model_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const BoundAdapter>> mounted_;
};

}  // namespace mlx_cpp
