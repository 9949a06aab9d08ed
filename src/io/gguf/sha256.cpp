#include "io/gguf/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "io/error.h"

namespace mlx_cpp::gguf {
namespace {

// OpenSSL's SHA-256 (libcrypto's EVP interface), fed in pieces.
class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1)
      throw Error("[sha256] OpenSSL cannot start a SHA-256 digest");
  }

  void update(const std::uint8_t* data, std::size_t size) {
    if (size > 0 && EVP_DigestUpdate(context_.get(), data, size) != 1)
      throw Error("[sha256] OpenSSL digest update failed");
  }

  std::string hex_digest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest, &length) != 1)
      throw Error("[sha256] OpenSSL digest failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (unsigned int i = 0; i < length; ++i) {
      text += kHex[digest[i] >> 4];
      text += kHex[digest[i] & 0xf];
    }
    return text;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context_;
};

}  // namespace

std::string sha256_bytes(std::span<const std::uint8_t> bytes) {
  return sha256_parts({bytes});
}

std::string sha256_parts(std::initializer_list<std::span<const std::uint8_t>> parts) {
  Sha256 hash;
  for (const auto& part : parts) hash.update(part.data(), part.size());
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
