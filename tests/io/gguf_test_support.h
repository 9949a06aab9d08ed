#pragma once
// Helpers shared by the GGUF tests: golden files, bitwise float comparison,
// and a little-endian byte builder for hand-crafted (hostile) GGUF files.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mlx_cpp::gguf::testing {

inline std::filesystem::path synthetic_dir() {
  return std::filesystem::path(MLX_CPP_GOLDENS) / "gguf_synthetic";
}

inline nlohmann::json read_manifest(const std::filesystem::path& dir) {
  std::ifstream stream(dir / "manifest.json");
  if (!stream) return nullptr;
  return nlohmann::json::parse(stream);
}

inline std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(stream)), {});
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// Bit-for-bit equality; reports the first mismatching element.
inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& expected,
                                                const float* actual, std::size_t count) {
  if (expected.size() != count) {
    return ::testing::AssertionFailure() << "size " << count << " != expected " << expected.size();
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (std::bit_cast<std::uint32_t>(expected[i]) != std::bit_cast<std::uint32_t>(actual[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " != expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class ByteBuilder {
 public:
  template <typename T>
  ByteBuilder& put(T value) {
    auto offset = bytes_.size();
    bytes_.resize(offset + sizeof(T));
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    return *this;
  }
  ByteBuilder& string(const std::string& text) {
    put<std::uint64_t>(text.size());
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
  }
  ByteBuilder& pad_to(std::size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  ByteBuilder& zeros(std::size_t count) {
    bytes_.resize(bytes_.size() + count, 0);
    return *this;
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

  std::filesystem::path write(const std::string& name) const {
    auto dir = std::filesystem::temp_directory_path() / "mlx_cpp_gguf_tests";
    std::filesystem::create_directories(dir);
    auto path = dir / name;
    std::ofstream stream(path, std::ios::binary | std::ios::trunc);
    stream.write(reinterpret_cast<const char*>(bytes_.data()),
                 static_cast<std::streamsize>(bytes_.size()));
    return path;
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace mlx_cpp::gguf::testing
