// A GGUF file: header, metadata and tensor table parsed, every tensor's
// bytes located. Every failure must be an Error.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "io/gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("input.gguf", data, size);
  try {
    mlx_cpp::gguf::GgufFile file(path);
    for (const auto& tensor : file.tensors()) (void)file.tensor_bytes(tensor);
    (void)file.string_or("general.architecture", "");
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
