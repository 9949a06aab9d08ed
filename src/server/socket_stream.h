#pragma once
// httplib's Stream over one gated Connection (connection_gate.h): reads
// come first from the bytes the gate already received, then from the
// socket. Body reads end at the gate's body deadline or byte cap (the cap
// marks the connection, so the error handler can answer 413), or when the
// gate stops. It never reads past what httplib asks for, so bytes of a
// next request stay on the connection.
#include <httplib.h>

#include <chrono>

#include "server/connection_gate.h"

namespace mlx_cpp::server {

class SocketStream : public httplib::Stream {
 public:
  SocketStream(Connection& connection, const ConnectionGate& gate);
  ~SocketStream() override;
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* data, size_t size) override;
  ssize_t write(const char* data, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return connection_.socket; }

 private:
  // Waits for `events` up to `until`, in slices so a stopping gate is seen.
  bool wait_for(short events, std::chrono::steady_clock::time_point until) const;

  Connection& connection_;
  const ConnectionGate& gate_;
  std::chrono::steady_clock::time_point body_deadline_;
  size_t consumed_ = 0;  // bytes of this request handed to httplib, header included
};

}  // namespace mlx_cpp::server
