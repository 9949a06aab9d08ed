// A model directory's config.json, checked as the loader checks it before
// any tensor is read: read (a nested text_config flattened), its
// architecture's dedicated graph described or the descriptor table's spec
// built, and its quantization block read. Every failure must be an Error.
#include <cstddef>
#include <cstdint>

#include "fuzz_input_file.h"
#include "io/error.h"
#include "model/architectures.h"
#include "model/config_reader.h"
#include "model/dedicated_graphs.h"
#include "model/language_model.h"
#include "model/quantization.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = mlx_cpp::fuzzing::write_input("config.json", data, size);
  try {
    const auto config = mlx_cpp::read_model_config(path.parent_path());
    if (const auto* dedicated = mlx_cpp::dedicated_graph_of(config))
      (void)dedicated->describe(mlx_cpp::ConfigReader(config));
    else
      (void)mlx_cpp::build_transformer_spec(config);
    (void)mlx_cpp::QuantizationConfig::from_model_config(config);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
