// A GGUF file: header, metadata and tensor table parsed, every tensor's
// bytes located; then the converter's front end on it: the architecture,
// the config.json it implies, each tensor's Hugging Face name and the
// tokenizer files synthesized from its vocabulary, written as JSON. Every
// failure must be an Error.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "io/gguf/architecture.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/tokenizer_synthesis.h"
#include "io/json_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("input.gguf", data, size);
  try {
    mlx_cpp::gguf::GgufFile file(path);
    for (const auto& tensor : file.tensors()) (void)file.tensor_bytes(tensor);
    (void)file.string_or("general.architecture", "");
    const auto& spec = mlx_cpp::gguf::architecture_of(file);
    for (const auto& tensor : file.tensors())
      (void)mlx_cpp::gguf::hugging_face_name(spec, tensor.name);
    // Written as the converter writes them (a string that is not UTF-8 is
    // an Error there).
    const auto out = path.parent_path();
    mlx_cpp::write_json_file(out / "config.json", mlx_cpp::gguf::model_config(file, spec), 2);
    const auto tokenizer = mlx_cpp::gguf::synthesize_tokenizer(file);
    mlx_cpp::write_json_file(out / "tokenizer.json", tokenizer.tokenizer, 2);
    mlx_cpp::write_json_file(out / "tokenizer_config.json", tokenizer.tokenizer_config, 2);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
