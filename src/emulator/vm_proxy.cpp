#include "emulator/vm_proxy.hpp"

#include "emulator/instant.hpp"

#include "emulator/lobby.hpp"

#include "common/event.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace exedev::emulator {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_head_bytes = 64 * 1024;
constexpr std::size_t relay_chunk = 64 * 1024;
constexpr std::string_view proxy_domain = ".exe.xyz";

using TlsSocket = ssl::stream<tcp::socket>;

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// What the proxy needs of a request head: the Host header and the ?share= token of the target.
struct RequestHead {
  std::string host;
  std::string share_token;
};

RequestHead read_head(std::string_view head) {
  RequestHead parsed;
  const auto line_end = head.find("\r\n");
  const auto request_line = head.substr(0, line_end);
  const auto target_start = request_line.find(' ');
  const auto target_end = request_line.rfind(' ');
  if (target_start != std::string_view::npos && target_end > target_start) {
    const auto target = request_line.substr(target_start + 1, target_end - target_start - 1);
    for (const std::string_view key : {"?share=", "&share="}) {
      if (const auto at = target.find(key); at != std::string_view::npos) {
        const auto value = target.substr(at + key.size());
        parsed.share_token = std::string(value.substr(0, value.find_first_of("&#")));
      }
    }
  }
  for (auto start = line_end; start != std::string_view::npos && start + 2 < head.size();) {
    const auto end = head.find("\r\n", start + 2);
    const auto line = head.substr(start + 2, end == std::string_view::npos ? std::string_view::npos : end - start - 2);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && lowercase(line.substr(0, colon)) == "host") {
      const auto value = line.substr(colon + 1);
      const auto first = value.find_first_not_of(" \t");
      const auto last = value.find_last_not_of(" \t");
      if (first != std::string_view::npos) parsed.host = lowercase(value.substr(first, last - first + 1));
    }
    start = end;
  }
  return parsed;
}

std::string plain_response(unsigned status, std::string_view reason, std::string_view body) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
                     "Connection: close\r\n\r\n{}",
                     status, reason, body.size(), body);
}

// Copies `from` to `to` until `from` ends or fails (true) or writing fails (false).
template <typename From, typename To>
asio::awaitable<bool> copy_stream(From& from, To& to) {
  std::string buffer(relay_chunk, '\0');
  for (;;) {
    const auto [ec, n] = co_await from.async_read_some(asio::buffer(buffer), use_tuple);
    if (ec) co_return true;
    const auto [write_ec, written] = co_await asio::async_write(to, asio::buffer(buffer.data(), n), use_tuple);
    if (write_ec) co_return false;
  }
}

asio::awaitable<void> client_to_vm(TlsSocket& client, tcp::socket& vm) {
  const bool ended = co_await copy_stream(client, vm);
  if (!ended) co_return;
  boost::system::error_code ignored;
  vm.shutdown(tcp::socket::shutdown_send, ignored);
  // The answer may still be coming: wait for the other direction to end this relay.
  detail::Event never;
  co_await never.wait();
}

asio::awaitable<void> vm_to_client(tcp::socket& vm, TlsSocket& client) { co_await copy_stream(vm, client); }

}  // namespace

VmProxy::VmProxy(asio::io_context& ioc, Lobby& lobby, ssl::context& tls, std::uint16_t port)
    : ioc_(ioc), lobby_(lobby), tls_(tls), acceptor_(ioc) {
  const tcp::endpoint wanted(asio::ip::address_v4::loopback(), port);
  acceptor_.open(wanted.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  boost::system::error_code ec;
  acceptor_.bind(wanted, ec);
  if (ec) acceptor_.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(ioc_, accept_loop(), asio::detached);
}

void VmProxy::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

asio::awaitable<void> VmProxy::accept_loop() {
  while (true) {
    auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
    if (ec) {
      if (!acceptor_.is_open()) co_return;
      continue;
    }
    asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> VmProxy::serve(tcp::socket socket) {
  TlsSocket client(std::move(socket), tls_);
  if (const auto [ec] = co_await client.async_handshake(ssl::stream_base::server, use_tuple); ec) co_return;
  std::string head;
  const auto [read_ec, head_size] = co_await asio::async_read_until(client, asio::dynamic_buffer(head, max_head_bytes), "\r\n\r\n", use_tuple);
  if (read_ec) co_return;
  const auto request = read_head(std::string_view(head).substr(0, head_size));
  // <vm>.exe.xyz or <vm>.exe.xyz:<port>
  std::string host = request.host;
  std::uint16_t requested_port = 0;
  if (const auto colon = host.rfind(':'); colon != std::string::npos) {
    const auto digits = host.substr(colon + 1);
    const bool numeric = !digits.empty() && digits.size() <= 5 && digits.find_first_not_of("0123456789") == std::string::npos;
    const unsigned value = numeric ? static_cast<unsigned>(std::stoul(digits)) : 0;
    requested_port = value == 443 || value > 65535 ? 0 : static_cast<std::uint16_t>(value);
    host.resize(colon);
  }
  std::string vm;
  if (host.size() > proxy_domain.size() && host.compare(host.size() - proxy_domain.size(), proxy_domain.size(), proxy_domain) == 0) {
    vm = host.substr(0, host.size() - proxy_domain.size());
  }
  // The lobby has no lock: this runs on the server's thread, the only one that touches it.
  const auto decision = lobby_.proxy_decision(vm, requested_port, request.share_token, Instant::now().wall);
  if (decision.status != 200) {
    const auto answer = plain_response(decision.status, decision.reason, decision.reason + "\n");
    co_await asio::async_write(client, asio::buffer(answer), use_tuple);
    co_await client.async_shutdown(use_tuple);
    co_return;
  }
  tcp::socket upstream(ioc_);
  const tcp::endpoint target(asio::ip::address_v4::loopback(), decision.port);
  if (const auto [ec] = co_await upstream.async_connect(target, use_tuple); ec) {
    const auto answer = plain_response(502, "Bad Gateway", fmt::format("nothing answers on port {} of VM {}\n", decision.port, vm));
    co_await asio::async_write(client, asio::buffer(answer), use_tuple);
    co_await client.async_shutdown(use_tuple);
    co_return;
  }
  // The head and whatever followed it go first, then both directions until the VM's side ends.
  if (const auto [ec, n] = co_await asio::async_write(upstream, asio::buffer(head), use_tuple); ec) co_return;
  co_await (client_to_vm(client, upstream) || vm_to_client(upstream, client));
  co_await client.async_shutdown(use_tuple);
}

}  // namespace exedev::emulator
