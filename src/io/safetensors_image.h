#pragma once
// A safetensors file built in memory: tensors' bytes laid out in one data
// section, with the header MLX and the safetensors library read. Once the
// arrays are copied in it needs no MLX, so a thread of its own can write
// it while the thread that owns the arrays goes on.
#include <mlx/array.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mlx_cpp {

class SafetensorsImage {
 public:
  // dtype as safetensors names it ("BF16", "U32", ...).
  void add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
           const void* data, std::size_t bytes);
  // An evaluated, row-contiguous array, copied.
  void add(const std::string& name, const mlx::core::array& array);

  std::map<std::string, std::string> metadata;  // the header's __metadata__

  const std::vector<std::uint8_t>& data() const { return data_; }
  // The header (JSON, padded to 8 bytes) with its length prefix.
  std::string header() const;
  // Writes the file durably (io/durable_file.h); throws Error. `midway`,
  // if given, runs when half the data is written (fault tests stop a
  // process there).
  void write(const std::filesystem::path& path, const std::function<void()>& midway = {}) const;
  // Puts in the metadata, under `key`, a SHA-256 of everything else the
  // file holds (the header's tensors and metadata, canonically, and the
  // data): safetensors_seal_holds() then tells a file that is not, to the
  // byte, what was sealed.
  void seal(const std::string& key);

 private:
  nlohmann::json canonical_header() const;
  struct Tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::uint64_t begin = 0, end = 0;
  };
  std::map<std::string, Tensor> tensors_;
  std::vector<std::uint8_t> data_;
};

// Whether the file at `path` carries a seal under `key` that matches its
// contents (SafetensorsImage::seal); false for a short, garbled or unsealed
// file, never an exception. Reads the whole file.
bool safetensors_seal_holds(const std::filesystem::path& path, const std::string& key);

}  // namespace mlx_cpp
