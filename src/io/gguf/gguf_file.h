#pragma once
// A parsed GGUF file (versions 2 and 3, little-endian): header, metadata,
// tensor infos and the data section, over a read-only memory map. Parsing
// validates every count, length, dimension and offset against the file size,
// so a truncated or hostile file throws Error instead of reading out of
// bounds. Tensor bytes are returned as spans into the map.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/gguf/gguf_value.h"
#include "io/gguf/mapped_file.h"

namespace mlx_cpp::gguf {

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // GGUF order: dims[0] is the fastest-varying
  std::uint32_t type = 0;           // a GgmlType id
  std::uint64_t offset = 0;         // from the start of the data section
  std::uint64_t element_count = 0;
  std::uint64_t byte_size = 0;

  // Row-major shape as MLX / Hugging Face write it (dims reversed).
  std::vector<int> shape() const;
};

class GgufFile {
 public:
  explicit GgufFile(const std::filesystem::path& path);

  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  const std::filesystem::path& path() const { return file_->path(); }

  const std::map<std::string, Value>& metadata() const { return metadata_; }
  const Value* find(const std::string& key) const;
  // Typed look-ups that throw Error naming the key when it is missing.
  const Value& require(const std::string& key) const;
  std::uint64_t uint_or(const std::string& key, std::uint64_t fallback) const;
  double float_or(const std::string& key, double fallback) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;
  std::span<const std::uint8_t> tensor_bytes(const TensorInfo& tensor) const;

 private:
  void parse();

  std::unique_ptr<MappedFile> file_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::map<std::string, Value> metadata_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t> tensor_index_;
};

}  // namespace mlx_cpp::gguf
