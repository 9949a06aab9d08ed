#pragma once
// A read-only memory map of a whole file (RAII). Weights are read straight
// from the map, so opening a 1 GB GGUF costs no copy.
#include <cstdint>
#include <filesystem>
#include <span>

namespace mlx_cpp::gguf {

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mlx_cpp::gguf
