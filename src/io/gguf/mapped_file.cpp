#include "io/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/error.h"

namespace mlx_cpp::gguf {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) {
    throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(descriptor);
    throw Error("cannot map " + path.string() + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(status.st_size);
  if (size_ > 0) {
    void* address = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, descriptor, 0);
    if (address == MAP_FAILED) {
      int error = errno;
      ::close(descriptor);
      throw Error("cannot map " + path.string() + ": " + std::strerror(error));
    }
    data_ = static_cast<const std::uint8_t*>(address);
  }
  ::close(descriptor);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

}  // namespace mlx_cpp::gguf
