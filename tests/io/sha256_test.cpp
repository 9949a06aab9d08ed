// SHA-256 of bytes and of files, against FIPS 180-4's test vectors.
#include "io/gguf/sha256.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/error.h"

namespace mlx_cpp::gguf {
namespace {

std::string digest_of(const std::string& text) {
  return sha256_bytes({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(digest_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, AFileIsHashedInPiecesAsAWhole) {
  // A million 'a's (FIPS 180-4's long vector), larger than one read.
  const auto path = std::filesystem::temp_directory_path() /
                    ("mlx_cpp_sha256_" + std::to_string(::getpid()) + ".bin");
  std::ofstream(path, std::ios::binary) << std::string(1'000'000, 'a') << std::string(600'000, 'b');
  const std::string million(1'000'000, 'a');
  EXPECT_EQ(digest_of(million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_file(path), digest_of(million + std::string(600'000, 'b')));
  std::filesystem::remove(path);
  EXPECT_THROW(sha256_file(path), Error);
}

}  // namespace
}  // namespace mlx_cpp::gguf
