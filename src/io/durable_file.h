#pragma once
// Files that are either wholly there or not at all, across crashes and power
// loss: written under a temporary name in the same directory, flushed to
// disk, renamed over the final name, and the directory flushed so the
// rename itself is kept.
#include <filesystem>
#include <functional>

namespace mlx_cpp {

// Calls write(temporary) to fill a temporary file beside `path` (its name
// keeps the extension of `path`), then makes it `path` durably. The
// temporary file is removed when write throws; throws Error when the
// flush or rename fails.
void write_durably(const std::filesystem::path& path,
                   const std::function<void(const std::filesystem::path&)>& write);

}  // namespace mlx_cpp
