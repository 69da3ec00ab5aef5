// The client's only Beast/OpenSSL translation unit: connections, TLS, HTTP framing, the pool.
#include "client/https_pool.hpp"

#include "client/resend.hpp"
#include "client/retry.hpp"
#include "common/coroutines.hpp"
#include "common/event.hpp"

#include <exedev/errors.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <memory>
#include <stdexcept>

#include <sys/socket.h>

namespace exedev::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t read_chunk = 64 * 1024;

using Parser = http::response_parser<http::buffer_body>;

void configure(Parser& parser, std::size_t max_header_bytes) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_header_bytes, UINT32_MAX)));
  parser.body_limit(boost::none);  // bodies are bounded by the collector (buffered) or the caller (streamed)
}

// Collects one response's body: streamed into the sink for a 200 with a sink, else buffered
// under a limit. Trailer fields are merged into the parser's fields by Beast once the last
// chunk is read, so the caller reads X-Exe-Exit after the body.
class Collector {
 public:
  Collector(const BodySink& sink, std::size_t limit) : sink_(sink), limit_(limit) {}

  void header(const Parser& parser) {
    response_.status = parser.get().result_int();
    if (const auto it = parser.get().find(http::field::retry_after); it != parser.get().end()) {
      response_.retry_after = parse_retry_after(it->value(), std::chrono::system_clock::now());
    }
    streaming_ = sink_ && response_.status == 200;
  }

  /// False when the sink asked to stop.
  bool body(std::string_view bytes) {
    if (bytes.empty()) return true;
    if (streaming_) return sink_(bytes);
    if (response_.body.size() + bytes.size() > limit_) {
      throw ProtocolError(fmt::format("exe.dev response body exceeds {} bytes", limit_));
    }
    response_.body.append(bytes);
    return true;
  }

  HttpResponse finish(const Parser& parser) {
    if (const auto it = parser.get().find("X-Exe-Exit"); it != parser.get().end()) {
      response_.exe_exit = std::string(it->value());
    }
    response_.complete = true;
    return std::move(response_);
  }

  HttpResponse stopped() { return std::move(response_); }

 private:
  const BodySink& sink_;
  std::size_t limit_;
  bool streaming_ = false;
  HttpResponse response_;
};

bool is_ip_literal(const std::string& host) {
  error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// "EOF before any response byte": the server closed the connection, most likely an idle
// keep-alive connection it had already given up on.
bool is_eof(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == ssl::error::stream_truncated || ec == asio::error::broken_pipe;
}

// A malformed message (as opposed to a connection that ended).
bool is_parse_error(const error_code& ec) {
  return !is_eof(ec) && ec.category() == http::make_error_code(http::error::bad_target).category();
}

struct Connection {
  // One of the two is set once the TCP connection is made.
  std::optional<tcp::socket> plain;
  std::optional<beast::ssl_stream<tcp::socket>> tls;
  beast::flat_buffer buffer;
  unsigned uses = 0;

  tcp::socket& socket() { return tls ? tls->next_layer() : *plain; }

  // An idle connection is usable when the server has sent nothing since the last response: a
  // FIN (EOF), a TLS close_notify or any stray byte all mean it must not be reused. The
  // request has not been written yet, so dropping it is always safe. One non-blocking peek
  // (MSG_DONTWAIT), without switching the socket's mode back and forth.
  bool idle_usable() {
    auto& s = socket();
    if (!s.is_open() || buffer.size() != 0) return false;
    char byte = 0;
    const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  void close() {
    if (!tls && !plain) return;  // connecting failed before there was a socket
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
  }
};

// Ends a phase (the TLS handshake, or an exchange: writing the request and reading the whole
// answer) that outlives its time: one timer, armed once for the phase rather than once per
// socket operation, closes the socket when it fires, which ends the read or write in
// progress. The handler only touches the connection while the guard exists.
class Deadline {
 public:
  Deadline(Connection& c, std::chrono::steady_clock::duration timeout)
      : timer_(c.socket().get_executor(), timeout), state_(std::make_shared<State>(State{&c, false})) {
    timer_.async_wait([state = state_](const error_code& ec) {
      if (ec || state->connection == nullptr) return;
      state->expired = true;
      state->connection->close();
    });
  }
  ~Deadline() {
    state_->connection = nullptr;
    timer_.cancel();
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  /// The time ran out (the socket is closed): an operation that failed, failed because of that.
  [[nodiscard]] bool expired() const { return state_->expired; }

 private:
  struct State {
    Connection* connection;
    bool expired;
  };
  asio::steady_timer timer_;
  std::shared_ptr<State> state_;
};

// What exchange() learned beyond the response: a failure the resend rule decides on (with
// the message its ConnectionError would carry), and whether the connection may be reused.
struct Exchange {
  std::optional<FailedExchange> failure;
  std::string failure_message;
  std::error_code failure_cause;
  bool reusable = false;
};

// What a ConnectionError names as its cause: Beast's own timeout as the standard one, so that
// callers can test `cause() == std::errc::timed_out` whichever phase timed out.
std::error_code cause_of(const error_code& ec) {
  if (ec == beast::error::timeout) return std::make_error_code(std::errc::timed_out);
  return ec;
}

}  // namespace

struct HttpsPool::Impl {
  asio::any_io_executor executor;
  HttpsPoolConfig config;
  std::optional<ssl::context> tls_context;
  std::deque<std::unique_ptr<Connection>> idle;
  std::size_t open = 0;  ///< Slots in use: idle + busy + connecting.
  detail::Event slot_freed;  ///< Wakes the longest waiter for a slot (acquire()).
  std::size_t opened = 0;
  std::string request_head;  ///< Every request's header up to the token (see request_head()).

  void log(LogLevel level, std::string_view text) const {
    if (config.logger) config.logger(level, text);
  }

  std::string where() const { return fmt::format("{}:{}", config.endpoint.host, config.endpoint.port); }

  void release(std::unique_ptr<Connection> connection, bool reusable) {
    if (connection && reusable) {
      idle.push_back(std::move(connection));
    } else {
      if (connection) connection->close();
      --open;
    }
    slot_freed.notify_one();
  }
};

namespace {

// A pool slot, with or without a connection. Gives the slot back however the request ends.
class Lease {
 public:
  explicit Lease(std::shared_ptr<HttpsPool::Impl> impl, std::unique_ptr<Connection> c = nullptr)
      : connection(std::move(c)), impl_(std::move(impl)) {}
  Lease(Lease&& other) noexcept = default;
  Lease& operator=(Lease&&) = delete;
  ~Lease() {
    if (impl_) impl_->release(std::move(connection), reusable);
  }

  std::unique_ptr<Connection> connection;
  bool reusable = false;

 private:
  std::shared_ptr<HttpsPool::Impl> impl_;
};

asio::awaitable<Lease> acquire(std::shared_ptr<HttpsPool::Impl> impl) {
  for (;;) {
    while (!impl->idle.empty()) {
      auto c = std::move(impl->idle.back());
      impl->idle.pop_back();
      if (c->idle_usable()) {
        co_return Lease(impl, std::move(c));
      }
      impl->log(LogLevel::debug, "exe.dev: dropping an idle connection the server closed");
      c->close();
      --impl->open;
    }
    if (impl->open < std::max<std::size_t>(impl->config.max_connections, 1)) {
      ++impl->open;
      co_return Lease(impl);
    }
    co_await impl->slot_freed.wait();
    // The state named first: GCC 12 mishandles a throw's temporaries in a statement that awaits.
    const auto cancellation = co_await asio::this_coro::cancellation_state;
    if (detail::was_cancelled(cancellation)) {
      impl->slot_freed.notify_one();  // a slot freed for this waiter goes to the next
      detail::throw_cancelled();
    }
  }
}

asio::awaitable<void> connect(HttpsPool::Impl& impl, Connection& c) {
  const auto& ep = impl.config.endpoint;
  tcp::resolver resolver(impl.executor);
  // The resolver has no timeout of its own.
  asio::steady_timer resolve_timer(impl.executor);
  resolve_timer.expires_after(impl.config.connect_timeout);
  bool resolve_timed_out = false;
  resolve_timer.async_wait([&resolver, &resolve_timed_out](const error_code& ec) {
    if (!ec) {
      resolve_timed_out = true;
      resolver.cancel();
    }
  });
  auto [rec, results] = co_await resolver.async_resolve(ep.host, ep.port, use_tuple);
  resolve_timer.cancel();
  if (rec == asio::error::operation_aborted && !resolve_timed_out) detail::throw_cancelled();
  if (rec) {
    throw ConnectionError(fmt::format("exe.dev: cannot resolve {}: {}", ep.host,
                                      resolve_timed_out ? std::string("timed out") : rec.message()),
                          false, resolve_timed_out ? std::make_error_code(std::errc::timed_out) : cause_of(rec));
  }
  // beast::tcp_stream times the whole connect over every resolved address; the connection
  // then runs on the bare socket, timed per phase (Deadline).
  beast::tcp_stream connecting(impl.executor);
  connecting.expires_after(impl.config.connect_timeout);
  auto [cec, endpoint] = co_await connecting.async_connect(results, use_tuple);
  if (cec == asio::error::operation_aborted) detail::throw_cancelled();
  if (cec) {
    throw ConnectionError(fmt::format("exe.dev: cannot connect to {}: {}", impl.where(),
                                      cec == beast::error::timeout ? std::string("timed out") : cec.message()),
                          false, cause_of(cec));
  }
  connecting.expires_never();
  tcp::socket socket = connecting.release_socket();
  // A request ends in a small write (its last TLS record); without this, Nagle's algorithm
  // meets the server's delayed ACK and such a request waits ~40 ms.
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (!ep.tls) {
    c.plain.emplace(std::move(socket));
  } else {
    c.tls.emplace(std::move(socket), *impl.tls_context);
    if (!is_ip_literal(ep.host)) {
      if (!SSL_set_tlsext_host_name(c.tls->native_handle(), ep.host.c_str())) {
        throw ConnectionError(fmt::format("exe.dev: cannot set TLS server name for {}", ep.host), false);
      }
    }
    c.tls->set_verify_mode(ssl::verify_peer);
    c.tls->set_verify_callback(ssl::host_name_verification(ep.host));
    const Deadline deadline(c, impl.config.handshake_timeout);
    auto [hec] = co_await c.tls->async_handshake(ssl::stream_base::client, use_tuple);
    if (hec && deadline.expired()) hec = beast::error::timeout;
    if (hec == asio::error::operation_aborted) detail::throw_cancelled();
    if (hec) {
      throw ConnectionError(fmt::format("exe.dev: TLS handshake with {} failed: {}", impl.where(),
                                        hec == beast::error::timeout ? std::string("timed out") : hec.message()),
                            false, cause_of(hec));
    }
  }
  ++impl.opened;
  impl.log(LogLevel::debug, fmt::format("exe.dev: connected to {}", impl.where()));
}

template <typename Stream>
asio::awaitable<HttpResponse> exchange(HttpsPool::Impl& impl, Stream& stream, Connection& c,
                                       const std::string& request, const PostOptions& options, bool reused,
                                       Exchange& result) {
  const Deadline deadline(c, options.timeout);
  const auto message = [&](std::string_view what, const error_code& ec) {
    return fmt::format("exe.dev: {} {} failed: {}", what, impl.where(),
                       ec == beast::error::timeout ? std::string("timed out") : ec.message());
  };
  // A failure the resend rule decides on (HttpsPool::post): resend, or which error.
  const auto decide = [&](FailedExchange failure, std::string text, const error_code& ec) {
    failure.reused = reused;
    failure.idempotent = options.idempotent;
    result.failure = failure;
    result.failure_message = std::move(text);
    result.failure_cause = cause_of(ec);
    return HttpResponse{};
  };

  const auto bytes = asio::buffer(request);  // named: no temporary inside co_await (GCC 12)
  auto [wec, written] = co_await asio::async_write(stream, bytes, use_tuple);
  if (wec && deadline.expired()) wec = beast::error::timeout;
  if (wec == asio::error::operation_aborted) detail::throw_cancelled();
  if (wec) {
    FailedExchange failure;
    failure.kind = FailedExchange::Kind::write_failed;
    failure.written = written;
    failure.timed_out = wec == beast::error::timeout;
    co_return decide(failure, message("request to", wec), wec);
  }

  Parser parser;
  configure(parser, impl.config.max_header_bytes);
  Collector collector(options.sink, impl.config.max_body_bytes);
  auto [hec, hn] = co_await http::async_read_header(stream, c.buffer, parser, use_tuple);
  if (hec && deadline.expired()) hec = beast::error::timeout;
  if (hec == asio::error::operation_aborted) detail::throw_cancelled();
  if (hec) {
    if (is_eof(hec) && !parser.got_some() && c.buffer.size() == 0) {
      FailedExchange failure;  // perhaps a keep-alive connection closed as the request went out
      failure.kind = FailedExchange::Kind::closed_silently;
      co_return decide(failure, message("reading the response from", hec), hec);
    }
    if (hec == http::error::header_limit) throw ProtocolError("exe.dev response header exceeds the size limit");
    if (is_parse_error(hec)) {
      throw ProtocolError(fmt::format("exe.dev sent an unreadable HTTP response: {}", hec.message()));
    }
    throw ConnectionError(message("reading the response from", hec), true, cause_of(hec));
  }
  collector.header(parser);

  std::array<char, read_chunk> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    // What came with the header (often the whole body) is parsed at once; an asynchronous
    // read_some would parse it too, but only after a round through the executor.
    error_code bec = http::error::need_more;
    if (c.buffer.size() != 0) c.buffer.consume(parser.put(c.buffer.data(), bec));
    if (bec == http::error::need_more) {
      // read_some, not read: read would wait until the 64 KiB chunk is full, holding back the
      // output of a slow command (live output is delivered as each read arrives).
      auto [rec, rn] = co_await http::async_read_some(stream, c.buffer, parser, use_tuple);
      bec = rec;
    }
    if (bec == http::error::need_buffer) bec = {};
    if (bec && deadline.expired()) bec = beast::error::timeout;
    const std::size_t got = chunk.size() - parser.get().body().size;
    if (got > 0 && !collector.body(std::string_view(chunk.data(), got))) {
      result.reusable = false;
      co_return collector.stopped();
    }
    if (bec == asio::error::operation_aborted) detail::throw_cancelled();
    if (bec) {
      if (is_parse_error(bec)) {
        throw ProtocolError(fmt::format("exe.dev sent an unreadable HTTP response: {}", bec.message()));
      }
      throw ConnectionError(message("reading the response from", bec), true, cause_of(bec));
    }
  }
  result.reusable = parser.get().keep_alive() && c.buffer.size() == 0;
  co_return collector.finish(parser);
}

// The fields every request shares, built once; a request adds the token, Content-Length and
// the body. HTTP/1.1 keeps the connection alive without a Connection field.
std::string request_head(const HttpsPoolConfig& config) {
  const auto& ep = config.endpoint;
  if (std::any_of(config.user_agent.begin(), config.user_agent.end(), [](char ch) {
        return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
      })) {
    throw std::invalid_argument("exe.dev: the user agent contains control characters");
  }
  const bool default_port = (ep.tls && ep.port == "443") || (!ep.tls && ep.port == "80");
  const std::string host = ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host;
  std::string head = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\n", ep.target, default_port ? host : host + ":" + ep.port);
  if (!config.user_agent.empty()) head += fmt::format("User-Agent: {}\r\n", config.user_agent);
  head += "Content-Type: text/plain; charset=utf-8\r\nAuthorization: Bearer ";
  return head;
}

}  // namespace

HttpsPool::HttpsPool(asio::any_io_executor executor, HttpsPoolConfig config) : impl_(std::make_shared<Impl>()) {
  impl_->executor = std::move(executor);
  impl_->config = std::move(config);
  impl_->request_head = request_head(impl_->config);
  if (impl_->config.endpoint.tls) {
    auto& ctx = impl_->tls_context.emplace(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    ctx.set_verify_mode(ssl::verify_peer);
    ctx.set_default_verify_paths();
    if (impl_->config.ca_file) {
      error_code ec;
      ctx.load_verify_file(*impl_->config.ca_file, ec);
      if (ec) throw std::invalid_argument(fmt::format("exe.dev: cannot load the CA file {}: {}", *impl_->config.ca_file, ec.message()));
    }
  }
}

HttpsPool::~HttpsPool() { close_idle(); }

void HttpsPool::close_idle() {
  while (!impl_->idle.empty()) {
    impl_->idle.back()->close();
    impl_->idle.pop_back();
    --impl_->open;
  }
}

std::size_t HttpsPool::connections_opened() const noexcept { return impl_->opened; }

asio::awaitable<HttpResponse> HttpsPool::post(const std::string& body, const std::string& token, const PostOptions& options) {
  auto impl = impl_;  // the pool outlives this request even if the HttpsPool is destroyed
  // The whole request in one buffer: one TLS record and one write for a small request.
  std::string request;
  request.reserve(impl->request_head.size() + token.size() + body.size() + 32);
  request.append(impl->request_head).append(token);
  request.append(fmt::format("\r\nContent-Length: {}\r\n\r\n", body.size())).append(body);

  ResendRule resend_rule;
  for (;;) {
    Lease lease = co_await acquire(impl);
    const bool reused = lease.connection != nullptr;
    if (!reused) {
      lease.connection = std::make_unique<Connection>();
      co_await connect(*impl, *lease.connection);
    }
    Connection& c = *lease.connection;
    ++c.uses;
    Exchange result;
    // (Not a conditional expression: GCC 12 miscompiles co_await inside one.)
    HttpResponse response;
    if (c.tls) {
      response = co_await exchange(*impl, *c.tls, c, request, options, reused, result);
    } else {
      response = co_await exchange(*impl, *c.plain, c, request, options, reused, result);
    }
    if (result.failure) {
      switch (resend_rule.on_failure(*result.failure)) {
        case ResendRule::Decision::resend:
          impl->log(LogLevel::debug, "exe.dev: the server had closed a keep-alive connection; re-sending on a new one");
          continue;
        case ResendRule::Decision::not_sent: throw ConnectionError(result.failure_message, false, result.failure_cause);
        case ResendRule::Decision::sent: throw ConnectionError(result.failure_message, true, result.failure_cause);
      }
    }
    lease.reusable = result.reusable;
    co_return response;
  }
}

HttpResponse parse_http_response(std::string_view raw, const BodySink& sink) {
  const HttpsPoolConfig limits;  // the client's defaults
  Parser parser;
  configure(parser, limits.max_header_bytes);
  Collector collector(sink, limits.max_body_bytes);
  std::array<char, read_chunk> chunk;
  bool header_seen = false;
  while (!parser.is_done()) {
    if (parser.is_header_done() && !header_seen) {
      collector.header(parser);
      header_seen = true;
    }
    if (header_seen) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
    }
    error_code ec;
    std::size_t used = 0;
    if (raw.empty()) {
      parser.put_eof(ec);  // a body delimited by the end of the connection
    } else {
      used = parser.put(asio::buffer(raw.data(), raw.size()), ec);
      raw.remove_prefix(used);
    }
    if (ec == http::error::need_buffer || ec == http::error::need_more) ec = {};
    if (header_seen) {
      const std::size_t got = chunk.size() - parser.get().body().size;
      if (got > 0 && !collector.body(std::string_view(chunk.data(), got))) return collector.stopped();
    }
    if (ec) throw ProtocolError(fmt::format("exe.dev sent an unreadable HTTP response: {}", ec.message()));
    // Nothing consumed and nothing completed: the parser needs bytes that never came (with
    // bytes left, they end inside a header line or a chunk size).
    if (used == 0 && !parser.is_done() && !(parser.is_header_done() && !header_seen)) {
      throw ProtocolError("exe.dev response is incomplete");
    }
  }
  if (!header_seen) collector.header(parser);
  return collector.finish(parser);
}

}  // namespace exedev::detail
