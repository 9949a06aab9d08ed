#pragma once
// A bounds-checked little-endian cursor over a byte range. Every read checks
// the remaining length first, so a truncated or hostile file produces an
// Error naming the field and offset instead of an out-of-bounds read.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "io/error.h"

namespace mlx_cpp::gguf {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size, std::string source)
      : data_(data), size_(size), source_(std::move(source)) {}

  std::size_t position() const { return position_; }
  std::size_t remaining() const { return size_ - position_; }
  const std::string& source() const { return source_; }

  template <typename T>
  T read(const char* field) {
    static_assert(std::is_trivially_copyable_v<T>);
    require(sizeof(T), field);
    T value;
    std::memcpy(&value, data_ + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  // A GGUF string: uint64 byte length, then the bytes (not NUL-terminated).
  std::string read_string(const char* field) {
    auto length = read<std::uint64_t>(field);
    if (length > remaining()) {
      fail(std::string(field) + " has length " + std::to_string(length) + " but only " +
           std::to_string(remaining()) + " bytes remain");
    }
    std::string text(reinterpret_cast<const char*>(data_ + position_), length);
    position_ += length;
    return text;
  }

  void require(std::size_t bytes, const char* field) const {
    if (bytes > remaining()) {
      fail(std::string("truncated while reading ") + field + " (needs " + std::to_string(bytes) +
           " bytes, " + std::to_string(remaining()) + " remain)");
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("[gguf] " + source_ + ": " + what + " at byte " + std::to_string(position_));
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
  std::string source_;
};

}  // namespace mlx_cpp::gguf
