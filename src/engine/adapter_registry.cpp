#include "engine/adapter_registry.h"

#include <cmath>

#include "io/error.h"
#include "model/adapter_files.h"

namespace mlx_cpp {

std::shared_ptr<const AdapterStack> load_adapter_stack(
    const LanguageModel& model, const std::vector<std::filesystem::path>& directories) {
  if (directories.empty()) return nullptr;
  std::vector<AdapterStack::Entry> entries;
  for (const auto& directory : directories) {
    auto files = read_adapter_directory(directory);
    entries.push_back({model.bind_adapter(files, files.directory.filename().string()), 1.0f});
  }
  return std::make_shared<AdapterStack>(std::move(entries));
}

void AdapterRegistry::mount(const std::string& name, const std::filesystem::path& directory) {
  if (name.empty() || name.find_first_of("+*:/ ") != std::string::npos)
    throw Error("adapter name \"" + name + "\": use letters, digits, '-', '_' or '.'");
  {
    std::lock_guard lock(mutex_);
    if (mounted_.count(name)) throw Error("an adapter named " + name + " is already mounted");
  }
  auto bound = model_.bind_adapter(read_adapter_directory(directory), name);
  std::lock_guard lock(mutex_);
  if (!mounted_.emplace(name, std::move(bound)).second)
    throw Error("an adapter named " + name + " is already mounted");
}

bool AdapterRegistry::unmount(const std::string& name) {
  std::lock_guard lock(mutex_);
  return mounted_.erase(name) > 0;
}

std::vector<AdapterRegistry::Mounted> AdapterRegistry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<Mounted> result;
  for (const auto& [name, adapter] : mounted_) result.push_back({adapter, adapter.use_count() - 1});
  return result;
}

std::size_t AdapterRegistry::mounted_bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t bytes = 0;
  for (const auto& [name, adapter] : mounted_) bytes += adapter->bytes;
  return bytes;
}

std::shared_ptr<const AdapterStack> AdapterRegistry::resolve(
    const std::vector<AdapterChoice>& choices) const {
  if (choices.empty()) return nullptr;
  std::vector<AdapterStack::Entry> entries;
  {
    std::lock_guard lock(mutex_);
    for (const auto& choice : choices) {
      auto found = mounted_.find(choice.name);
      if (found == mounted_.end()) {
        std::string names;
        for (const auto& [name, adapter] : mounted_) names += (names.empty() ? "" : ", ") + name;
        throw AdapterNotFound(
            "no adapter named " + choice.name + " is mounted" +
            (names.empty() ? std::string(" (none are)") : " (mounted: " + names + ")"));
      }
      entries.push_back({found->second, choice.weight});
    }
  }
  return std::make_shared<AdapterStack>(std::move(entries));
}

}  // namespace mlx_cpp
