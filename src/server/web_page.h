#pragma once
// The chat page at GET / and its files under /webui/ (src/webui, compiled
// into the binary). The page is one more client of the public API; these
// routes only hand out static files, so they need no API key (the page asks
// for one when the API answers 401).
#include <httplib.h>

namespace mlx_cpp::server {

// Registers GET / and GET /webui/...; every answer carries a strict
// Content-Security-Policy and an ETag (a matching If-None-Match gets 304).
void register_web_page(httplib::Server& http);

// Whether a request path belongs to the page (served without the API key).
bool is_web_page_path(const std::string& path);

}  // namespace mlx_cpp::server
