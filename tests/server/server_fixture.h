#pragma once
// Runs the real HttpServer and EngineThread on a free loopback port with a
// FakeBackend, and offers small helpers to talk to it.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_backend.h"
#include "server/engine_thread.h"
#include "server/http_server.h"

namespace mlx_cpp::server::testing {

using Json = nlohmann::ordered_json;

class ServerFixture {
 public:
  // With load_gate, the backend is only built once release_load() is called.
  explicit ServerFixture(FakeScript script = {}, ServerConfig config = {}, bool load_gate = false)
      : script_(std::move(script)) {
    config.port = 0;
    config.log_requests = getenv("SERVER_TEST_LOG") != nullptr;
    engine_ = std::make_unique<EngineThread>(
        [this, load_gate]() -> std::unique_ptr<Backend> {
          if (load_gate) {
            std::unique_lock lock(load_mutex_);
            load_changed_.wait(lock, [this] { return load_released_; });
          }
          auto backend = std::make_unique<FakeBackend>(script_);
          backend_ = backend.get();
          return backend;
        },
        "fake-model", config.max_queue);
    http_ = std::make_unique<HttpServer>(config, *engine_);
    port_ = http_->bind();
    listener_ = std::thread([this] { http_->listen(); });
    engine_->start();
    if (!load_gate) engine_->wait_until_loaded();
  }

  ~ServerFixture() {
    release_load();
    if (backend_) backend_->open_gate();
    http_->stop();
    engine_->shutdown(std::chrono::milliseconds(0));
    listener_.join();
  }

  void release_load() {
    std::lock_guard lock(load_mutex_);
    load_released_ = true;
    load_changed_.notify_all();
  }

  int port() const { return port_; }
  FakeBackend& backend() { return *backend_; }
  EngineThread& engine() { return *engine_; }

  httplib::Client client(httplib::Headers headers = {}) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60, 0);
    client.set_default_headers(std::move(headers));
    return client;
  }

  httplib::Result post(const std::string& path, const Json& body) const {
    return client().Post(path.c_str(), body.dump(), "application/json");
  }

  // Waits (bounded) until `condition` holds; false if it never did.
  static bool eventually(const std::function<bool()>& condition) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
  }

  // A raw connection for tests that misbehave on purpose.
  int connect_raw() const {
    int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(socket_fd);
      return -1;
    }
    return socket_fd;
  }

  static void send_request(int socket_fd, const std::string& path, const std::string& body) {
    std::string request = "POST " + path +
                          " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
    ::send(socket_fd, request.data(), request.size(), MSG_NOSIGNAL);
  }

  // Reads until `marker` has been seen (or the peer closes); returns the bytes.
  static std::string read_until(int socket_fd, const std::string& marker) {
    std::string received;
    char buffer[4096];
    while (received.find(marker) == std::string::npos) {
      ssize_t count = ::recv(socket_fd, buffer, sizeof(buffer), 0);
      if (count <= 0) break;
      received.append(buffer, static_cast<size_t>(count));
    }
    return received;
  }

 private:
  FakeScript script_;
  FakeBackend* backend_ = nullptr;
  std::mutex load_mutex_;
  std::condition_variable load_changed_;
  bool load_released_ = false;
  std::unique_ptr<EngineThread> engine_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::thread listener_;
};

// The JSON payloads of an SSE body, "[DONE]" kept as a string.
inline std::vector<Json> sse_payloads(const std::string& body) {
  std::vector<Json> payloads;
  size_t start = 0;
  while ((start = body.find("data: ", start)) != std::string::npos) {
    size_t end = body.find("\n\n", start);
    std::string data = body.substr(start + 6, end - start - 6);
    payloads.push_back(data == "[DONE]" ? Json("[DONE]") : Json::parse(data));
    start = end;
  }
  return payloads;
}

inline Json chat_body(const std::string& content, Json extra = Json::object()) {
  Json body = {{"model", "fake-model"}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

}  // namespace mlx_cpp::server::testing
