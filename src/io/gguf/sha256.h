#pragma once
// SHA-256 (FIPS 180-4) of a file, streamed; used to verify pulled weights.
#include <filesystem>
#include <string>

namespace mlx_cpp::gguf {

// Lower-case hex digest; throws Error when the file cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace mlx_cpp::gguf
