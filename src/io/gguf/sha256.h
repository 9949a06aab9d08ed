#pragma once
// SHA-256 of a file, streamed (OpenSSL's libcrypto); used to verify pulled
// weights.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>

namespace mlx_cpp::gguf {

// Lower-case hex digest; throws Error when the file cannot be read.
std::string sha256_file(const std::filesystem::path& path);
std::string sha256_bytes(std::span<const std::uint8_t> bytes);
// The digest of the parts one after another, without joining them.
std::string sha256_parts(std::initializer_list<std::span<const std::uint8_t>> parts);

}  // namespace mlx_cpp::gguf
