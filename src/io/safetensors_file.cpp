#include "io/safetensors_file.h"

#include <mlx/io.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/error.h"
#include "io/json_depth.h"

namespace mlx_cpp {
namespace {

// Bytes per element of the dtypes MLX can load from safetensors.
uint64_t dtype_size(const std::string& dtype) {
  static const std::unordered_map<std::string, uint64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"U16", 2}, {"I16", 2},
      {"F16", 2},  {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},
      {"U64", 8},  {"I64", 8},  {"F64", 8}, {"C64", 8}, {"F8_E4M3", 1}};
  auto found = sizes.find(dtype);
  return found == sizes.end() ? 0 : found->second;
}

SafetensorsTensorInfo parse_tensor_entry(const std::string& file, const std::string& name,
                                         const nlohmann::json& entry, uint64_t data_size) {
  auto where = "safetensors " + file + ": tensor '" + name + "'";
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
      !entry.contains("data_offsets"))
    throw Error(where + " lacks dtype, shape or data_offsets");
  SafetensorsTensorInfo info;
  if (!entry["dtype"].is_string()) throw Error(where + " has a non-string dtype");
  info.dtype = entry["dtype"].get<std::string>();
  uint64_t element_size = dtype_size(info.dtype);
  if (element_size == 0) throw Error(where + " has unsupported dtype " + info.dtype);
  const auto& offsets = entry["data_offsets"];
  if (!entry["shape"].is_array() || !offsets.is_array() || offsets.size() != 2 ||
      !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
    throw Error(where + " has a malformed shape or data_offsets");
  uint64_t elements = 1;
  for (const auto& dim : entry["shape"]) {
    if (!dim.is_number_unsigned()) throw Error(where + " has a negative or non-integer dim");
    auto value = dim.get<uint64_t>();
    if (value > 0 && elements > std::numeric_limits<uint64_t>::max() / value)
      throw Error(where + " has a shape that overflows");
    elements *= value;
    info.shape.push_back(static_cast<int64_t>(value));
  }
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  if (info.begin > info.end || info.end > data_size)
    throw Error(where + " has data_offsets [" + std::to_string(info.begin) + ", " +
                std::to_string(info.end) + ") outside the " + std::to_string(data_size) +
                "-byte data section (truncated file?)");
  if (elements > std::numeric_limits<uint64_t>::max() / element_size ||
      info.end - info.begin != elements * element_size)
    throw Error(where + " holds " + std::to_string(info.end - info.begin) +
                " bytes but its shape and dtype need " + std::to_string(elements * element_size));
  return info;
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const auto file = path.string();
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error("cannot open safetensors file " + file);
  std::error_code size_error;
  const uint64_t file_size = std::filesystem::file_size(path, size_error);
  if (size_error || file_size < 8)
    throw Error("safetensors " + file + ": file too short for a header (" +
                std::to_string(file_size) + " bytes)");
  unsigned char length_bytes[8];
  stream.read(reinterpret_cast<char*>(length_bytes), 8);
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | length_bytes[i];
  if (header_length == 0 || header_length > file_size - 8 || header_length > (100u << 20))
    throw Error("safetensors " + file + ": header length " + std::to_string(header_length) +
                " does not fit the " + std::to_string(file_size) + "-byte file");
  std::string text(header_length, '\0');
  if (!stream.read(text.data(), static_cast<std::streamsize>(header_length)))
    throw Error("safetensors " + file + ": cannot read the header");
  check_json_depth(text, "safetensors " + file + ": the header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // syntax, or a number out of range
    throw Error("safetensors " + file + ": corrupted header JSON (" + error.what() + ")");
  }
  if (!header.is_object()) throw Error("safetensors " + file + ": header is not a JSON object");
  SafetensorsHeader result;
  const uint64_t data_size = file_size - 8 - header_length;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;  // what MLX writes for "no metadata"
      if (!entry.is_object()) throw Error("safetensors " + file + ": malformed __metadata__");
      for (const auto& [key, value] : entry.items())
        if (value.is_string()) result.metadata[key] = value.get<std::string>();
      continue;
    }
    result.tensors[name] = parse_tensor_entry(file, name, entry, data_size);
  }
  return result;
}

std::unordered_map<std::string, mlx::core::array> load_safetensors_checked(
    const std::filesystem::path& path) {
  read_safetensors_header(path);
  try {
    return mlx::core::load_safetensors(path.string()).first;
  } catch (const std::exception& error) {
    throw Error("safetensors " + path.string() + ": " + error.what());
  }
}

std::vector<std::filesystem::path> find_weight_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    auto name = entry.path().filename().string();
    if (name.rfind("model", 0) == 0 && entry.path().extension() == ".safetensors")
      files.push_back(entry.path());
  }
  if (error) throw Error("cannot list model directory " + directory.string());
  if (files.empty()) throw Error("no model*.safetensors weight files in " + directory.string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace mlx_cpp
