#include "server/connection_gate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mlx_cpp::server {
namespace {

thread_local Connection* serving = nullptr;

// Canned answers written by the gate itself, before any route sees the
// request (OpenAI's error shape, as every other error of the server).
std::string canned(int status, const char* reason, const char* message, const char* type) {
  const std::string body = std::string("{\"error\":{\"message\":\"") + message + "\",\"type\":\"" +
                           type + "\",\"param\":null,\"code\":null}}";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

const std::string kTooManyConnections = canned(
    503, "Service Unavailable", "too many open connections; try again later", "server_overloaded");
const std::string kTooManyFromClient = canned(
    429, "Too Many Requests", "too many open connections from this address", "rate_limit_error");
const std::string kHeaderTimeout = canned(
    408, "Request Timeout", "the request header did not arrive in time", "invalid_request_error");
const std::string kHeaderTooLarge =
    canned(431, "Request Header Fields Too Large", "the request header is too large",
           "invalid_request_error");

void close_socket(int socket, const std::string* response) {
  if (response)  // best effort: the client may be gone or not reading
    (void)::send(socket, response->data(), response->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(socket, SHUT_RDWR);
  ::close(socket);
}

// The peer's address without its port ("" when unknown: such connections
// share one count).
std::string peer_address(int socket) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(socket, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = nullptr;
  if (address.ss_family == AF_INET)
    raw = &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr;
  else if (address.ss_family == AF_INET6)
    raw = &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
  if (!raw || !::inet_ntop(address.ss_family, raw, text, sizeof(text))) return "";
  return text;
}

// Where the header block ends (after its blank line), or 0.
size_t find_header_end(const std::string& buffered) {
  size_t at = buffered.find("\r\n\r\n");
  return at == std::string::npos ? 0 : at + 4;
}

}  // namespace

ConnectionGate::ConnectionGate(GateLimits limits, size_t workers, Serve serve)
    : limits_(limits), serve_(std::move(serve)) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  watcher_ = std::thread([this] { watch(); });
  workers_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

ConnectionGate::~ConnectionGate() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Connection* ConnectionGate::current() {
  return serving;
}

bool ConnectionGate::current_client_gone() {
  return serving && peer_closed(serving->socket);
}

bool peer_closed(int socket) {
  pollfd polled{socket, POLLIN, 0};
  if (::poll(&polled, 1, 0) <= 0) return false;
  char byte;
  return ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

bool ConnectionGate::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

size_t ConnectionGate::open_connections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

void ConnectionGate::admit(int socket) {
  auto connection = std::make_unique<Connection>();
  connection->socket = socket;
  connection->client = peer_address(socket);
  connection->deadline = std::chrono::steady_clock::now() + limits_.header_timeout;
  const std::string* refusal = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& from_client = open_per_client_[connection->client];
    if (stopping_) {
      refusal = nullptr;
    } else if (open_ >= limits_.max_connections) {
      refusal = &kTooManyConnections;
    } else if (limits_.max_connections_per_client > 0 &&
               from_client >= limits_.max_connections_per_client) {
      refusal = &kTooManyFromClient;
    } else {
      ++open_;
      ++from_client;
      arriving_.push_back(std::move(connection));
    }
    if (connection && from_client == 0) open_per_client_.erase(connection->client);
  }
  if (connection) {
    close_socket(socket, refusal);
    return;
  }
  wake_watcher();
}

void ConnectionGate::wake_watcher() {
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGate::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !watcher_.joinable()) return;
    stopping_ = true;
  }
  wake_watcher();
  work_ready_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  for (auto& worker : workers_)
    if (worker.joinable()) worker.join();
}

void ConnectionGate::close(std::unique_ptr<Connection> connection, Closing why) {
  const std::string* response = nullptr;
  // An idle connection just closes; one that began a request is told why.
  if (why == Closing::timed_out && !connection->buffered.empty()) response = &kHeaderTimeout;
  if (why == Closing::header_too_large) response = &kHeaderTooLarge;
  close_socket(connection->socket, response);
  std::lock_guard<std::mutex> lock(mutex_);
  --open_;
  const auto client = open_per_client_.find(connection->client);
  if (client != open_per_client_.end() && --client->second == 0) open_per_client_.erase(client);
}

bool ConnectionGate::read_waiting(Connection& connection) {
  char chunk[4096];
  while (connection.buffered.size() < limits_.max_header_bytes) {
    const size_t room =
        std::min(sizeof(chunk), limits_.max_header_bytes - connection.buffered.size());
    const ssize_t got = ::recv(connection.socket, chunk, room, MSG_DONTWAIT);
    if (got > 0) {
      connection.buffered.append(chunk, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got < 0 && errno == EINTR) continue;
    return false;  // closed by the client, or an error
  }
  return true;
}

void ConnectionGate::hand_to_worker(std::unique_ptr<Connection> connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.push_back(std::move(connection));
  }
  work_ready_.notify_one();
}

void ConnectionGate::return_to_gate(std::unique_ptr<Connection> connection) {
  connection->close_after = false;
  connection->body_too_large = false;
  connection->deadline = std::chrono::steady_clock::now() + limits_.header_timeout;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      arriving_.push_back(std::move(connection));
      connection = nullptr;
    }
  }
  if (connection) {
    close(std::move(connection), Closing::stopping);
    return;
  }
  wake_watcher();
}

void ConnectionGate::watch() {
  std::vector<std::unique_ptr<Connection>> waiting;
  std::vector<pollfd> polled;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& connection : arriving_) waiting.push_back(std::move(connection));
      arriving_.clear();
      if (stopping_) break;
    }
    // A returned connection may already hold its next request (pipelined).
    const auto now = std::chrono::steady_clock::now();
    auto next_deadline = now + std::chrono::hours(1);
    std::vector<std::unique_ptr<Connection>> kept;
    for (auto& connection : waiting) {
      connection->header_end = find_header_end(connection->buffered);
      if (connection->header_end > 0) {
        hand_to_worker(std::move(connection));
      } else if (connection->buffered.size() >= limits_.max_header_bytes) {
        close(std::move(connection), Closing::header_too_large);
      } else if (connection->deadline <= now) {
        close(std::move(connection), Closing::timed_out);
      } else {
        next_deadline = std::min(next_deadline, connection->deadline);
        kept.push_back(std::move(connection));
      }
    }
    waiting = std::move(kept);
    polled.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (const auto& connection : waiting) polled.push_back(pollfd{connection->socket, POLLIN, 0});
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_deadline - now);
    const int ready = ::poll(polled.data(), polled.size(), static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) break;
    if (polled[0].revents & POLLIN) {
      uint64_t count = 0;
      (void)::read(wake_fd_, &count, sizeof(count));
    }
    kept.clear();
    for (size_t i = 0; i < waiting.size(); ++i) {
      const short events = polled[i + 1].revents;
      if (events != 0 && !read_waiting(*waiting[i])) {
        close(std::move(waiting[i]), Closing::client_gone);
        continue;
      }
      kept.push_back(std::move(waiting[i]));
    }
    waiting = std::move(kept);
  }
  for (auto& connection : waiting) close(std::move(connection), Closing::stopping);
}

void ConnectionGate::work() {
  while (true) {
    std::unique_ptr<Connection> connection;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping, and nothing left to serve
      connection = std::move(ready_.front());
      ready_.pop_front();
    }
    serving = connection.get();
    bool keep = false;
    try {
      keep = serve_(*connection);
    } catch (...) {
      keep = false;
    }
    serving = nullptr;
    if (keep && !connection->close_after)
      return_to_gate(std::move(connection));
    else
      close(std::move(connection), Closing::finished);
  }
}

}  // namespace mlx_cpp::server
