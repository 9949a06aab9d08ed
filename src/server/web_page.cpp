#include "server/web_page.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "server/embedded_files.h"

namespace mlx_cpp::server {
namespace {

// Scripts and styles only from this server, requests only to it, nothing
// framed or submitted elsewhere: a model's reply that slipped past the
// sanitizer still could not run code, load a remote image or leak the
// conversation.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// A strong validator from the bytes (FNV-1a, 64 bits): a new binary with a
// changed file gets a new tag, so browsers revalidate rather than guess.
std::string entity_tag(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  char text[24];
  std::snprintf(text, sizeof(text), "\"%016llx\"", static_cast<unsigned long long>(hash));
  return text;
}

struct ServedFile {
  const EmbeddedFile* file;
  std::string tag;
};

const std::map<std::string, ServedFile, std::less<>>& served_files() {
  static const auto files = [] {
    std::map<std::string, ServedFile, std::less<>> table;
    for (const auto& file : web_page_files())
      table.emplace(std::string(file.url), ServedFile{&file, entity_tag(file.bytes)});
    return table;
  }();
  return files;
}

void serve_file(const httplib::Request& request, httplib::Response& response) {
  const auto& files = served_files();
  auto found = files.find(request.path);
  if (found == files.end()) {
    response.status = 404;  // the error handler writes the body
    return;
  }
  const ServedFile& served = found->second;
  response.set_header("Content-Security-Policy", kContentSecurityPolicy);
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("Referrer-Policy", "no-referrer");
  response.set_header("X-Frame-Options", "DENY");
  // Always revalidated: cheap (a 304) and never a page from an older binary.
  response.set_header("Cache-Control", "no-cache");
  response.set_header("ETag", served.tag);
  if (request.get_header_value("If-None-Match") == served.tag) {
    response.status = 304;
    return;
  }
  response.status = 200;
  response.set_content(served.file->bytes.data(), served.file->bytes.size(),
                       std::string(served.file->content_type));
}

}  // namespace

bool is_web_page_path(const std::string& path) {
  return path == "/" || path.rfind("/webui/", 0) == 0;
}

void register_web_page(httplib::Server& http) {
  http.Get("/", serve_file);
  http.Get(R"(/webui/.+)", serve_file);
}

}  // namespace mlx_cpp::server
