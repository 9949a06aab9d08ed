#include "model/prompt_cache_file.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

#include "io/error.h"
#include "io/safetensors_file.h"
#include "model/recurrent_state_cache.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace fs = std::filesystem;
namespace {

std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// "<layer>.<rest>" → layer and rest.
std::optional<std::pair<int, std::string>> split_layer(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return std::nullopt;
  auto layer = parse_index(std::string_view(name).substr(0, dot));
  if (!layer) return std::nullopt;
  return std::pair{*layer, name.substr(dot + 1)};
}

// mlx-lm's ArraysCache saves no token count: a recurrent layer's cache
// takes the attention layers' (all of a prompt's layers saw its tokens).
void count_recurrent_tokens(CacheList& caches) {
  int tokens = 0;
  for (const auto& cache : caches)
    if (!cache->as_recurrent_state()) tokens = std::max(tokens, cache->offset());
  for (auto& cache : caches)
    if (auto* recurrent = cache->as_recurrent_state(); recurrent && recurrent->offset() == 0)
      recurrent->set_offset(tokens);
}

class Reader {
 public:
  explicit Reader(const fs::path& path) : file_(path.string()) {}

  PromptCacheContents read() {
    const auto header = read_safetensors_header(file_);
    auto arrays = load_safetensors_checked(file_);
    std::map<int, std::string> classes;
    std::unordered_map<std::string, std::string> scalar_names, scalar_types;
    PromptCacheContents contents;
    for (const auto& [key, value] : header.metadata) {
      if (key.rfind("0.", 0) == 0) {
        contents.metadata[key.substr(2)] = value;
      } else if (key.rfind("1.", 0) == 0) {
        auto layer = parse_index(std::string_view(key).substr(2));
        if (!layer) fail("metadata key " + key + " does not name a layer");
        classes[*layer] = value;
      } else if (key == "2.0") {
        continue;  // mlx-lm's placeholder
      } else if (key.rfind("2.", 0) == 0) {
        auto rest = split_layer(key.substr(2));
        if (!rest || (rest->second != "0" && rest->second != "1"))
          fail("metadata key " + key + " is not a scalar entry");
        (rest->second == "0" ? scalar_names : scalar_types)[std::to_string(rest->first)] = value;
      } else {
        fail("metadata key " + key + " is not part of a prompt cache");
      }
    }
    if (classes.empty()) fail("names no cache classes (metadata 1.<layer>): not a prompt cache");
    const int layers = static_cast<int>(classes.size());
    if (classes.rbegin()->first != layers - 1) fail("cache classes skip a layer");

    std::vector<CacheState> states(layers);
    for (const auto& [layer, kind] : classes) states[layer].kind = kind;
    std::unordered_map<std::string, std::string> scalar_of;  // array name → type
    for (const auto& [index, name] : scalar_names) {
      auto type = scalar_types.find(index);
      if (type == scalar_types.end()) fail("scalar entry " + index + " has no type");
      scalar_of[name] = type->second;
    }
    for (auto& [name, array] : arrays) {
      auto split = split_layer(name);
      if (!split || split->first >= layers)
        fail("tensor " + name + " belongs to no layer of " + std::to_string(layers));
      auto& items = states[split->first].items;
      auto scalar = scalar_of.find(name);
      if (scalar == scalar_of.end()) {
        items.emplace_back(split->second, array);
        continue;
      }
      if (scalar->second == "none") {
        items.emplace_back(split->second, std::monostate{});
        continue;
      }
      if (scalar->second != "scalar")
        fail("tensor " + name + " is a " + scalar->second +
             " item, which no supported cache kind holds");
      if (array.ndim() != 0 || !mx::issubdtype(array.dtype(), mx::integer))
        fail("scalar " + name + " is not an integer");
      items.emplace_back(split->second, mx::astype(array, mx::int32).item<int>());
    }
    for (int layer = 0; layer < layers; ++layer) {
      try {
        contents.caches.push_back(cache_from_state(states[layer]));
      } catch (const Error& error) {
        fail("layer " + std::to_string(layer) + ": " + error.what());
      }
    }
    count_recurrent_tokens(contents.caches);
    return contents;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("prompt cache " + file_ + ": " + what);
  }
  std::string file_;
};

}  // namespace

SafetensorsImage prompt_cache_image(const CacheList& caches,
                                    const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, mx::array>> arrays;
  SafetensorsImage image;
  for (const auto& [key, value] : metadata) image.metadata["0." + key] = value;
  image.metadata["2.0"] = "";  // mlx-lm's placeholder that keeps the scalar list non-empty
  int scalars = 0;
  for (std::size_t layer = 0; layer < caches.size(); ++layer) {
    const auto state = caches[layer]->saved_state();
    image.metadata["1." + std::to_string(layer)] = state.kind;
    for (const auto& [item, value] : state.items) {
      const std::string name = std::to_string(layer) + "." + item;
      if (const auto* array = std::get_if<mx::array>(&value)) {
        arrays.emplace_back(name, mx::contiguous(*array));
      } else if (std::holds_alternative<std::monostate>(value)) {
        // A Python None: an empty array typed "none", as mlx-lm saves it.
        arrays.emplace_back(name, mx::array({}, mx::float32));
        const std::string entry = "2." + std::to_string(++scalars);
        image.metadata[entry + ".0"] = name;
        image.metadata[entry + ".1"] = "none";
      } else {
        arrays.emplace_back(name, mx::array(std::get<int>(value)));
        const std::string entry = "2." + std::to_string(++scalars);
        image.metadata[entry + ".0"] = name;
        image.metadata[entry + ".1"] = "scalar";
      }
    }
  }
  std::vector<mx::array> values;
  for (const auto& [name, array] : arrays) values.push_back(array);
  mx::eval(values);
  for (const auto& [name, array] : arrays) image.add(name, array);
  return image;
}

void save_prompt_cache(const fs::path& path, const CacheList& caches,
                       const std::map<std::string, std::string>& metadata) {
  prompt_cache_image(caches, metadata).write(path);
}

PromptCacheContents load_prompt_cache(const fs::path& path) {
  return Reader(path).read();
}

}  // namespace mlx_cpp
