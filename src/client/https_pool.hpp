#pragma once
// HTTP/1.1 over TLS (or plain TCP for http:// endpoints) to POST /exec, with a keep-alive
// connection pool. The only part of the client that knows Beast and OpenSSL (https_pool.cpp).

#include "client/settings.hpp"

#include <exedev/client.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

struct HttpsPoolConfig {
  Endpoint endpoint;
  std::optional<std::string> ca_file;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds handshake_timeout{10'000};
  std::size_t max_connections = 8;
  std::string user_agent;
  Logger logger;
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_body_bytes = 8 * 1024 * 1024;  ///< For bodies read into memory.
};

struct HttpResponse {
  unsigned status = 0;
  std::string body;  ///< Empty when a sink took a 200 body.
  std::optional<std::chrono::milliseconds> retry_after;  ///< Retry-After, as a wait from its arrival
  std::optional<std::string> exe_exit;  ///< The X-Exe-Exit trailer (or header), when present.
  bool complete = false;  ///< The whole message was read (false when a sink stopped it).
};

/// Takes body bytes of a 200 answer as they arrive; returning false stops reading (the
/// connection is then closed, not reused).
using BodySink = std::function<bool(std::string_view)>;

struct PostOptions {
  /// May the request be re-sent when a reused keep-alive connection turns out to have been
  /// closed by the server after the request was written but before any response byte?
  /// (Requests that provably never reached the server are always re-sent once.)
  bool idempotent = false;
  std::chrono::milliseconds timeout{60'000};  ///< Whole exchange, connecting excluded.
  BodySink sink;
};

/// Throws ConnectionError (sent() tells whether the request may have reached the server) and
/// ProtocolError (unreadable HTTP). A cancelled post throws boost::system::system_error with
/// operation_aborted; its connection is closed.
class HttpsPool {
 public:
  HttpsPool(boost::asio::any_io_executor executor, HttpsPoolConfig config);
  ~HttpsPool();
  HttpsPool(const HttpsPool&) = delete;
  HttpsPool& operator=(const HttpsPool&) = delete;

  /// The arguments must outlive the returned awaitable (await it at once).
  boost::asio::awaitable<HttpResponse> post(const std::string& body, const std::string& token, const PostOptions& options);
  /// Closes the idle connections (busy ones close when their request ends).
  void close_idle();
  /// Connections opened so far (diagnostics and tests).
  [[nodiscard]] std::size_t connections_opened() const noexcept;

  struct Impl;  ///< Opaque (https_pool.cpp).

 private:
  std::shared_ptr<Impl> impl_;
};

/// Parses a complete HTTP/1.1 response held in memory with the same Beast parser settings as
/// the pool (header and body limits, trailers). For tests of the parsing rules.
[[nodiscard]] HttpResponse parse_http_response(std::string_view raw, const BodySink& sink = {});

}  // namespace exedev::detail
