// A tokenizer.json: loaded, then used to encode and decode a few texts.
// Every failure must be an Error.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("tokenizer.json", data, size);
  try {
    auto tokenizer = mlx_cpp::Tokenizer::from_directory(path.parent_path());
    for (const char* text : {"Hello, world!", " 123 déjà vu\n\t", "<|im_start|>user"}) {
      auto ids = tokenizer->encode(text, true);
      (void)tokenizer->decode(ids, false);
    }
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
