#pragma once
// Files compiled into the binary (the web page and the libraries it uses):
// a table generated at build time by cmake/embed_files.cmake.
#include <cstddef>
#include <string_view>
#include <vector>

namespace mlx_cpp::server {

struct EmbeddedFile {
  std::string_view url;           // the path it is served at
  std::string_view content_type;  // with its charset where it is text
  std::string_view bytes;
};

const std::vector<EmbeddedFile>& web_page_files();

}  // namespace mlx_cpp::server
