#include "io/gguf/sha256.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <vector>

#include "io/error.h"

namespace mlx_cpp::gguf {
namespace {

constexpr std::array<std::uint32_t, 64> kRoundConstants{
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotate_right(std::uint32_t value, int count) {
  return (value >> count) | (value << (32 - count));
}

class Sha256 {
 public:
  void update(const std::uint8_t* data, std::size_t size) {
    length_bits_ += static_cast<std::uint64_t>(size) * 8;
    std::size_t i = 0;
    for (; block_size_ == 0 && size - i >= 64; i += 64) {  // whole blocks, no staging
      std::copy(data + i, data + i + 64, block_.begin());
      compress();
    }
    for (; i < size; ++i) {
      block_[block_size_++] = data[i];
      if (block_size_ == 64) {
        compress();
        block_size_ = 0;
      }
    }
  }

  std::string hex_digest() {
    std::uint64_t length = length_bits_;
    std::uint8_t padding = 0x80;
    update(&padding, 1);
    std::uint8_t zero = 0;
    while (block_size_ != 56) update(&zero, 1);
    for (int shift = 56; shift >= 0; shift -= 8) {
      auto byte = static_cast<std::uint8_t>(length >> shift);
      update(&byte, 1);
    }
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (auto word : state_) {
      for (int shift = 28; shift >= 0; shift -= 4) hex.push_back(digits[(word >> shift) & 0xF]);
    }
    return hex;
  }

 private:
  void compress() {
    std::array<std::uint32_t, 64> schedule{};
    for (int i = 0; i < 16; ++i) {
      schedule[i] = static_cast<std::uint32_t>(block_[4 * i]) << 24 |
                    static_cast<std::uint32_t>(block_[4 * i + 1]) << 16 |
                    static_cast<std::uint32_t>(block_[4 * i + 2]) << 8 | block_[4 * i + 3];
    }
    for (int i = 16; i < 64; ++i) {
      auto s0 = rotate_right(schedule[i - 15], 7) ^ rotate_right(schedule[i - 15], 18) ^
                (schedule[i - 15] >> 3);
      auto s1 = rotate_right(schedule[i - 2], 17) ^ rotate_right(schedule[i - 2], 19) ^
                (schedule[i - 2] >> 10);
      schedule[i] = schedule[i - 16] + s0 + schedule[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = state_;
    for (int i = 0; i < 64; ++i) {
      auto s1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
      auto choice = (e & f) ^ (~e & g);
      auto t1 = h + s1 + choice + kRoundConstants[i] + schedule[i];
      auto s0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
      auto majority = (a & b) ^ (a & c) ^ (b & c);
      auto t2 = s0 + majority;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    std::array<std::uint32_t, 8> added{a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) state_[i] += added[i];
  }

  std::array<std::uint32_t, 8> state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t block_size_ = 0;
  std::uint64_t length_bits_ = 0;
};

}  // namespace

std::string sha256_bytes(std::span<const std::uint8_t> bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error("[sha256] cannot open " + path.string());
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  while (stream) {
    stream.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash.update(reinterpret_cast<const std::uint8_t*>(buffer.data()),
                static_cast<std::size_t>(stream.gcount()));
  }
  if (stream.bad()) throw Error("[sha256] read error in " + path.string());
  return hash.hex_digest();
}

}  // namespace mlx_cpp::gguf
