// A safetensors file: its JSON header read and checked against the file.
// Every failure must be an Error.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "io/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("model.safetensors", data, size);
  try {
    (void)mlx_cpp::read_safetensors_header(path);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
