// B1 raw: the same job written directly on Beast and OpenSSL, as a user without this library
// would: one HTTPS POST /exec from a coroutine, header-only Beast and Asio TLS.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <string>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

asio::awaitable<std::string> exec(asio::ssl::context& tls, std::string host, std::string line) {
  const auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(executor);
  beast::ssl_stream<beast::tcp_stream> stream(executor, tls);
  SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
  const auto endpoints = co_await resolver.async_resolve(host, "443", asio::use_awaitable);
  co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::use_awaitable);
  co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  http::request<http::string_body> request(http::verb::post, "/exec", 11);
  request.set(http::field::host, host);
  request.set(http::field::authorization, "Bearer token");
  request.body() = line;
  request.prepare_payload();
  co_await http::async_write(stream, request, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response, asio::use_awaitable);
  co_return response.body();
}

int main() {
  asio::io_context io;
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_default_verify_paths();
  tls.set_verify_mode(asio::ssl::verify_peer);
  asio::co_spawn(io, exec(tls, "exe.dev", "whoami"), asio::detached);
  io.run();
}
