#include "server/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <array>
#include <charconv>
#include <iostream>
#include <optional>
#include <thread>

#include "io/error.h"
#include "server/anthropic_shape.h"
#include "server/connection_gate.h"
#include "server/route_context.h"
#include "server/socket_stream.h"
#include "server/sse.h"
#include "server/web_page.h"

namespace mlx_cpp::server {
namespace {

thread_local std::chrono::steady_clock::time_point request_start;
thread_local std::string log_detail;

const std::array<std::string, 11> kRouteLabels = {"/v1/chat/completions",
                                                  "/v1/completions",
                                                  "/v1/messages",
                                                  "/v1/messages/count_tokens",
                                                  "/v1/models",
                                                  "/health",
                                                  "/tokenize",
                                                  "/detokenize",
                                                  "/metrics",
                                                  "/stats",
                                                  "/"};

// A bounded label for metrics: the route, or "other" (unknown paths must not
// create one time series each). The page's files count under "/webui".
std::string route_label(const std::string& path) {
  for (const auto& route : kRouteLabels)
    if (path == route || (route == "/v1/models" && path.rfind("/v1/models/", 0) == 0)) return route;
  // The Responses API's routes, its stored responses' ids included.
  if (path == "/v1/responses" || path.starts_with("/v1/responses/")) return "/v1/responses";
  if (path.rfind("/webui/", 0) == 0) return "/webui";
  return "other";
}

// Anthropic's routes answer errors in its shape, also those refused
// before routing (API key, body size).
bool answers_anthropic(const std::string& path) {
  return path == "/v1/messages" || path.starts_with("/v1/messages/");
}

// Compares without an early exit so the time taken says nothing of the key.
bool same_secret(const std::string& given, const std::string& expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return difference == 0;
}

std::string default_message(int status) {
  switch (status) {
    case 404:
      return "no such route";
    case 405:
      return "method not allowed on this route";
    case 413:
      return "request body is too large";
    case 414:
      return "request URI is too long";
    default:
      return "invalid HTTP request";
  }
}

// cpp-httplib 0.11 listens with a backlog of 5, so a burst of clients
// overflows the accept queue and some connections fail. Linux lets listen()
// be called again on a listening socket to resize its queue; the socket is
// found by its port since httplib keeps it private.
void widen_listen_backlog(int port) {
  rlimit limit{};
  int highest =
      getrlimit(RLIMIT_NOFILE, &limit) == 0 ? int(std::min<rlim_t>(limit.rlim_cur, 65536)) : 1024;
  for (int fd = 0; fd < highest; ++fd) {
    int listening = 0;
    socklen_t size = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening) continue;
    sockaddr_storage address{};
    socklen_t address_size = sizeof(address);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &address_size) != 0) continue;
    int bound_port = address.ss_family == AF_INET6
                         ? ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port)
                         : ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    if (bound_port == port) ::listen(fd, SOMAXCONN);
  }
}

// httplib's accept loop hands each socket to a task queue; the gate takes
// it from there without blocking, so the queue runs tasks where they come.
class InlineTaskQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> task) override { task(); }
  void shutdown() override {}
};

// The refusals decided from the header alone. Their body is not read, so
// the connection closes after the answer.
std::optional<ErrorResponse> refuse_body(const httplib::Request& request, size_t max_body_bytes) {
  const std::string encoding = request.get_header_value("Content-Encoding");
  if (!encoding.empty() && encoding != "identity")
    return ErrorResponse{415,
                         error_body("compressed request bodies (Content-Encoding: " + encoding +
                                        ") are not accepted; send the body as it is",
                                    "invalid_request_error")};
  const std::string transfer = request.get_header_value("Transfer-Encoding");
  if (!transfer.empty() && transfer != "chunked")
    return ErrorResponse{
        400, error_body("Transfer-Encoding '" + transfer + "' is not supported (only chunked)",
                        "invalid_request_error")};
  if (request.has_header("Content-Length")) {
    const std::string length = request.get_header_value("Content-Length");
    size_t declared = 0;
    const auto [end, failed] =
        std::from_chars(length.data(), length.data() + length.size(), declared);
    if (failed != std::errc() || end != length.data() + length.size())
      return ErrorResponse{400, error_body("invalid Content-Length", "invalid_request_error")};
    if (declared > max_body_bytes)
      return ErrorResponse{
          413, error_body("request body is too large (" + length + " bytes; the limit is " +
                              std::to_string(max_body_bytes) + ")",
                          "invalid_request_error")};
  }
  return std::nullopt;
}

}  // namespace

// httplib's server with every connection passed through a ConnectionGate:
// httplib parses and routes requests, the gate owns sockets and threads.
class GatedServer : public httplib::Server {
 public:
  GatedServer(const GateLimits& limits, size_t workers)
      : gate_(limits, workers, [this](Connection& connection) { return serve(connection); }) {
    new_task_queue = [] { return new InlineTaskQueue; };
  }
  ConnectionGate& gate() { return gate_; }

 private:
  bool process_and_close_socket(socket_t socket) override {
    gate_.admit(socket);
    return true;
  }

  // One request, parsed, routed and answered by httplib over our stream.
  bool serve(Connection& connection) {
    SocketStream stream(connection, gate_);
    bool client_closes = false;
    const bool answered = process_request(stream, gate_.stopping(), client_closes, nullptr);
    return answered && !client_closes;
  }

  ConnectionGate gate_;
};

void set_json(httplib::Response& response, int status, const nlohmann::ordered_json& body) {
  response.status = status;
  response.set_content(json_text(body), "application/json");
}

void set_error(httplib::Response& response, const ErrorResponse& error) {
  set_json(response, error.status, error.body);
}

void set_log_detail(std::string detail) {
  log_detail = std::move(detail);
}

std::string take_log_detail() {
  return std::exchange(log_detail, {});
}

httplib::Server::Handler guarded(RouteHandler handler) {
  return
      [handler = std::move(handler)](const httplib::Request& request, httplib::Response& response) {
        try {
          handler(request, response);
        } catch (...) {
          auto error = error_response_for(std::current_exception());
          const auto message = error.body["error"]["message"].get<std::string>();
          if (error.status == 500)
            std::cerr << "error: " << request.method << ' ' << request.path << ": " << message
                      << std::endl;
          else
            set_log_detail(message);  // the request log line says why
          set_error(response, error);
        }
      };
}

HttpServer::HttpServer(ServerConfig config, EngineThread& engine)
    : config_(std::move(config)),
      engine_(engine),
      context_(new RouteContext{config_, engine_, metrics_}) {
  GateLimits limits;
  limits.max_connections = config_.max_connections;
  limits.max_connections_per_client = config_.max_connections_per_client;
  limits.header_timeout = config_.header_timeout;
  limits.body_timeout = config_.body_timeout;
  limits.max_body_bytes = config_.max_body_bytes;
  // Every request being served holds a worker (a streamed answer for its
  // whole length); waiting and idle connections hold none.
  http_ = std::make_unique<GatedServer>(limits, config_.max_queue + 8);
  http_->set_payload_max_length(config_.max_body_bytes);
  http_->set_tcp_nodelay(true);
  install_hooks();
  register_routes(*http_, *context_);
  if (config_.web_page) register_web_page(*http_);
}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::install_hooks() {
  http_->set_pre_routing_handler([this](const httplib::Request& request,
                                        httplib::Response& response) {
    request_start = std::chrono::steady_clock::now();
    log_detail.clear();
    if (auto refusal = refuse_body(request, config_.max_body_bytes)) {
      if (Connection* connection = ConnectionGate::current()) connection->close_after = true;
      response.set_header("Connection", "close");
      set_json(response, refusal->status,
               answers_anthropic(request.path) ? anthropic_error_body(*refusal) : refusal->body);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (config_.api_key.empty() || request.path == "/health" || request.method == "OPTIONS" ||
        (config_.web_page && is_web_page_path(request.path)))
      return httplib::Server::HandlerResponse::Unhandled;
    // Anthropic's clients send the key as x-api-key.
    if (same_secret(request.get_header_value("Authorization"), "Bearer " + config_.api_key) ||
        same_secret(request.get_header_value("x-api-key"), config_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    const ErrorResponse refusal{
        401, error_body("invalid or missing API key (send 'Authorization: Bearer KEY' or "
                        "'x-api-key: KEY')",
                        "authentication_error", {}, "invalid_api_key")};
    set_json(response, refusal.status,
             answers_anthropic(request.path) ? anthropic_error_body(refusal) : refusal.body);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Failures httplib answers itself (unknown route, body too large) get an
  // OpenAI-style body too.
  http_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& request,
                                                                   httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // A chunked body that passed the cap fails its read (400 from httplib).
    if (Connection* connection = ConnectionGate::current();
        connection && connection->body_too_large)
      response.status = 413;
    std::string type = response.status == 404 ? "not_found_error" : "invalid_request_error";
    const ErrorResponse error{response.status, error_body(default_message(response.status), type)};
    set_json(response, error.status,
             answers_anthropic(request.path) ? anthropic_error_body(error) : error.body);
    return httplib::Server::HandlerResponse::Handled;
  }));
  if (!config_.cors_origin.empty()) {
    http_->Options(R"(.*)", [](const httplib::Request&, httplib::Response& response) {
      response.status = 204;
      response.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      response.set_header("Access-Control-Allow-Headers",
                          "Authorization, Content-Type, x-api-key, anthropic-version");
      response.set_header("Access-Control-Max-Age", "600");
    });
    http_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& response) {
      response.set_header("Access-Control-Allow-Origin", config_.cors_origin);
      response.set_header("Vary", "Origin");
    });
  }
  http_->set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    metrics_.record_request(route_label(request.path), response.status);
    if (!config_.log_requests) return;
    auto elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - request_start);
    std::string detail = take_log_detail();
    std::clog << "[serve] " << request.remote_addr << ' ' << request.method << ' ' << request.path
              << ' ' << response.status << ' ' << static_cast<long long>(elapsed.count()) << "ms"
              << (detail.empty() ? "" : " ") << detail << std::endl;
  });
}

int HttpServer::bind() {
  int port = config_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(config_.host);
  } else if (!http_->bind_to_port(config_.host, port)) {
    port = -1;
  }
  if (port < 0)
    throw Error("serve: cannot listen on " + config_.host + ":" + std::to_string(config_.port) +
                " (address in use or not available)");
  widen_listen_backlog(port);
  return port;
}

void HttpServer::listen() {
  if (!stopping_) http_->listen_after_bind();
}

void HttpServer::finish_responses(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (context_->open_responses.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpServer::stop() {
  stopping_ = true;
  http_->stop();
  http_->gate().stop();
}

}  // namespace mlx_cpp::server
