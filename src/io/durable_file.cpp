#include "io/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "io/error.h"

namespace mlx_cpp {
namespace fs = std::filesystem;
namespace {

void flush_to_disk(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw Error("cannot open " + path.string() + " to flush it: " + std::strerror(errno));
  const int result = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (result != 0)
    throw Error("cannot flush " + path.string() + " to disk: " + std::strerror(saved));
}

}  // namespace

void write_durably(const fs::path& path, const std::function<void(const fs::path&)>& write) {
  const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
  // The extension stays last: some writers (MLX's safetensors) append
  // theirs to a name that lacks it.
  const fs::path temporary = directory / ("." + path.stem().string() + ".tmp-" +
                                          std::to_string(::getpid()) + path.extension().string());
  try {
    write(temporary);
    flush_to_disk(temporary, false);
    std::error_code error;
    fs::rename(temporary, path, error);
    if (error)
      throw Error("cannot rename " + temporary.string() + " to " + path.string() + ": " +
                  error.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
  flush_to_disk(directory, true);
}

}  // namespace mlx_cpp
