#pragma once
// The readers under test take paths: each input is written to a file of
// this process's own, named once.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace mlx_cpp::fuzzing {

inline std::filesystem::path write_input(const std::string& name, const uint8_t* data,
                                         size_t size) {
  static const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("mlx-cpp-fuzz-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const auto path = directory / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace mlx_cpp::fuzzing
