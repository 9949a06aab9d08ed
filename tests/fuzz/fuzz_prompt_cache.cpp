// A prompt-cache file (mlx-lm's save_prompt_cache format): read, each
// layer's cache rebuilt from its state, and what the engine asks of a
// cache before matching it to a model (token count, bytes, its state
// saved again and evaluated). Every failure must be an Error.
#include <mlx/transforms.h>

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "model/prompt_cache_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("cache.safetensors", data, size);
  try {
    auto contents = mlx_cpp::load_prompt_cache(path);
    std::vector<mlx::core::array> arrays;
    for (const auto& cache : contents.caches) {
      (void)cache->offset();
      (void)cache->byte_size();
      for (const auto& [name, item] : cache->saved_state().items)
        if (const auto* array = std::get_if<mlx::core::array>(&item)) arrays.push_back(*array);
    }
    mlx::core::eval(arrays);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
