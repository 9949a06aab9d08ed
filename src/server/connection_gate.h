#pragma once
// Every TCP connection of the server passes through this gate, so that a
// slow or idle client never holds a worker thread:
//   - a connection waits here, on one poll() thread, until a whole request
//     header has arrived (bytes are read into the connection's buffer);
//     a header not complete within `header_timeout` of the connection's
//     opening (or of its previous response) closes it, with a 408 when
//     part of a request came;
//   - only then does a worker serve it (`Serve`), reading the body through
//     a SocketStream with its own deadline and byte cap;
//   - a kept-alive connection comes back here between requests;
//   - past `max_connections` a new connection gets a 503 and is closed;
//     past `max_connections_per_client` from one address, a 429, so that
//     one client cannot take every connection of the server.
// stop() closes every waiting connection at once and makes body reads
// give up, so that connected clients cannot hold the process open.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace mlx_cpp::server {

struct GateLimits {
  size_t max_connections = 512;
  size_t max_connections_per_client = 128;  // from one address; 0: no limit
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{60000};   // a request body, whole
  std::chrono::milliseconds write_timeout{10000};  // one write to a client that reads nothing
  size_t max_body_bytes = 8u << 20;                // raw bytes after the header
  size_t max_header_bytes = 16u << 10;
};

// One client connection: its socket and what was read but not consumed.
struct Connection {
  int socket = -1;
  std::string client;  // the peer's address, without its port
  std::string buffered;
  size_t header_end = 0;  // bytes of `buffered` up to and with the blank line
  std::chrono::steady_clock::time_point deadline;
  // Set while a request is served: why it must not be kept alive.
  bool close_after = false;
  bool body_too_large = false;
};

// Whether the peer of `socket` has closed its end: a readable socket that
// peeks nothing (or fails) has; one that peeks bytes holds a next,
// pipelined request.
bool peer_closed(int socket);

class ConnectionGate {
 public:
  // Serves one request of `connection` on a worker thread; returns whether
  // the connection may stay open for another.
  using Serve = std::function<bool(Connection& connection)>;

  ConnectionGate(GateLimits limits, size_t workers, Serve serve);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Takes a freshly accepted socket; never blocks.
  void admit(int socket);
  // Closes waiting connections, refuses new ones and ends body reads;
  // returns once the workers have finished what they were serving.
  void stop();
  bool stopping() const;
  const GateLimits& limits() const { return limits_; }
  size_t open_connections() const;

  // The connection the calling worker thread is serving, or null.
  static Connection* current();
  // Whether the client of that connection has hung up (false on a thread
  // serving none). For work done before any byte of the answer is
  // written, such as rendering a prompt.
  static bool current_client_gone();

 private:
  void watch();
  void work();
  void wake_watcher();
  // Reads what a waiting connection has; false when it must close.
  bool read_waiting(Connection& connection);
  enum class Closing { finished, timed_out, header_too_large, client_gone, stopping };
  void close(std::unique_ptr<Connection> connection, Closing why);
  void hand_to_worker(std::unique_ptr<Connection> connection);
  void return_to_gate(std::unique_ptr<Connection> connection);

  GateLimits limits_;
  Serve serve_;
  int wake_fd_ = -1;  // an eventfd the watcher polls beside the sockets

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::vector<std::unique_ptr<Connection>> arriving_;  // admitted or returned, not yet watched
  std::deque<std::unique_ptr<Connection>> ready_;      // a header is in, waiting for a worker
  size_t open_ = 0;
  std::unordered_map<std::string, size_t> open_per_client_;
  bool stopping_ = false;

  std::thread watcher_;
  std::vector<std::thread> workers_;
};

}  // namespace mlx_cpp::server
