#include "server/socket_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mlx_cpp::server {
namespace {

constexpr auto kSlice = std::chrono::milliseconds(100);

void address_of(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

}  // namespace

SocketStream::SocketStream(Connection& connection, const ConnectionGate& gate)
    : connection_(connection),
      gate_(gate),
      body_deadline_(std::chrono::steady_clock::now() + gate.limits().body_timeout) {}

bool SocketStream::wait_for(short events, std::chrono::steady_clock::time_point until) const {
  while (!gate_.stopping()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return false;
    const auto slice = std::min<std::chrono::steady_clock::duration>(until - now, kSlice);
    pollfd polled{connection_.socket, events, 0};
    const int ready = ::poll(
        &polled, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
  return false;
}

bool SocketStream::is_readable() const {
  return consumed_ < connection_.buffered.size() || wait_for(POLLIN, body_deadline_);
}

SocketStream::~SocketStream() {
  // What was not consumed (a next, pipelined request) stays for the gate.
  connection_.buffered.erase(0, std::min(consumed_, connection_.buffered.size()));
}

ssize_t SocketStream::read(char* data, size_t size) {
  if (size == 0) return 0;
  // httplib reads the header byte by byte, so a read never spans its end;
  // what follows it is the body, counted raw against the cap.
  if (consumed_ >= connection_.header_end) {
    const size_t body = consumed_ - connection_.header_end;
    const size_t cap = gate_.limits().max_body_bytes;
    if (body >= cap) {
      connection_.body_too_large = true;
      connection_.close_after = true;
      return -1;
    }
    size = std::min(size, cap - body);
  }
  if (consumed_ < connection_.buffered.size()) {
    const size_t count = std::min(size, connection_.buffered.size() - consumed_);
    std::memcpy(data, connection_.buffered.data() + consumed_, count);
    consumed_ += count;
    return static_cast<ssize_t>(count);
  }
  if (!wait_for(POLLIN, body_deadline_)) {
    connection_.close_after = true;
    return -1;
  }
  const ssize_t got = ::recv(connection_.socket, data, size, 0);
  if (got <= 0) {
    connection_.close_after = true;
    return got < 0 ? -1 : 0;
  }
  consumed_ += static_cast<size_t>(got);
  return got;
}

bool SocketStream::is_writable() const {
  if (!wait_for(POLLOUT, std::chrono::steady_clock::now() + gate_.limits().write_timeout))
    return false;
  return !peer_closed(connection_.socket);
}

ssize_t SocketStream::write(const char* data, size_t size) {
  if (!wait_for(POLLOUT, std::chrono::steady_clock::now() + gate_.limits().write_timeout)) {
    connection_.close_after = true;
    return -1;
  }
  const ssize_t sent = ::send(connection_.socket, data, size, MSG_NOSIGNAL);
  if (sent < 0) connection_.close_after = true;
  return sent;
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(connection_.socket, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    address_of(address, ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(connection_.socket, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    address_of(address, ip, port);
}

}  // namespace mlx_cpp::server
