// A model directory's config.json, checked as the loader checks it before
// any tensor is read: read (a nested text_config flattened), its
// architecture's dedicated graph described or the descriptor table's spec
// built, and its quantization block read. Every failure must be an Error.
#include <cstddef>
#include <cstdint>
#include <string>

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
    const mlx_cpp::DedicatedGraph* dedicated = nullptr;
    if (config.contains("model_type") && config["model_type"].is_string())
      dedicated = mlx_cpp::find_dedicated_graph(
          mlx_cpp::remap_model_type(config["model_type"].get<std::string>()));
    if (dedicated)
      (void)dedicated->describe(mlx_cpp::ConfigReader(config));
    else
      (void)mlx_cpp::build_transformer_spec(config);
    (void)mlx_cpp::QuantizationConfig::from_model_config(config);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
