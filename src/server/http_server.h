#pragma once
// The OpenAI-compatible HTTP front end: cpp-httplib's server with our
// routes (routes.cpp), API-key check, CORS, body limit, OpenAI-style error
// bodies for every failure and one log line per request. It talks to the
// model only through the EngineThread's task queue.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "server/engine_thread.h"
#include "server/metrics.h"

namespace mlx_cpp::server {

struct RouteContext;
class GatedServer;

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (see HttpServer::bind)
  std::string api_key;               // empty: no authentication
  std::string cors_origin;           // empty: no CORS headers
  size_t max_queue = 32;             // requests waiting or running before 503
  size_t max_body_bytes = 8u << 20;  // raw bytes after the header, chunked framing included
  // Connections open at once, idle ones included (503 beyond; 429 beyond
  // the count from one address); a request's
  // header must arrive within header_timeout of the connection's opening
  // or of its previous answer, and its body within body_timeout.
  size_t max_connections = 512;
  size_t max_connections_per_client = 128;  // from one address; 0: no limit
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{60000};
  bool log_requests = true;
  bool web_page = true;  // the chat page at GET / (web_page.h)
  // false (--reasoning-format none): reasoning stays in the content as written.
  bool parse_reasoning = true;
  // Reasoning tokens a request may think for before the engine ends the
  // block (-1: no limit); thinking_token_budget overrides it per request.
  int reasoning_budget = -1;
  // Where GET /v1/adapters/available looks, and relative mount paths go
  // (empty: none).
  std::filesystem::path adapter_dir;
};

class HttpServer {
 public:
  HttpServer(ServerConfig config, EngineThread& engine);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port. Throws Error on failure.
  int bind();
  // Serves until stop(); returns after in-flight connections have ended.
  void listen();
  // Waits up to `bound` for generation answers still being written (call
  // after the engine has finished or cancelled their tasks): stop() cuts
  // any that remain, since httplib ends chunked responses when stopping.
  void finish_responses(std::chrono::milliseconds bound);
  // Stops accepting; safe from any thread.
  void stop();
  Metrics& metrics() { return metrics_; }

 private:
  void install_hooks();

  ServerConfig config_;
  EngineThread& engine_;
  Metrics metrics_;
  std::unique_ptr<GatedServer> http_;
  std::unique_ptr<RouteContext> context_;
  std::atomic<bool> stopping_{false};
};

}  // namespace mlx_cpp::server
