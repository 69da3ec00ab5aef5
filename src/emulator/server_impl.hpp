#pragma once
// The emulator server's shared inside: Emulator::Impl and the stream helpers, for the two
// translation units that use Beast and Asio SSL (server.cpp: accepting, sessions, /exec and the
// facade; ssh_stream.cpp: streaming an `ssh` command's output). Private to src/emulator.

#include <exedev/emulator/emulator.hpp>

#include "emulator/host_runner.hpp"
#include "emulator/lobby.hpp"
#include "emulator/ssh_endpoints.hpp"
#include "emulator/ssh_process.hpp"
#include "emulator/ssh_server.hpp"
#include "emulator/tls.hpp"
#include "emulator/vm_host.hpp"
#include "emulator/vm_proxy.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace exedev::emulator {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// The two streams a session runs on; session, handle_exec and run_ssh are instantiated for both.
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Emulator::Impl {
  Options options;
  std::filesystem::path state_dir;
  bool temporary_state = false;
  std::filesystem::path ca_path;
  std::string control_secret;
  std::string login_shell;  ///< resolved from Options::login_shell
  TlsMaterial tls;
  std::unique_ptr<ssl::context> ssl_context;
  std::unique_ptr<FileVmHost> host;  // before the lobby, which uses it
  std::unique_ptr<Lobby> lobby;
  std::unique_ptr<SshServer> ssh_server;  // null when SSH cannot be served here
  std::filesystem::path known_hosts;      // <state_dir>/ssh/known_hosts, empty without SSH
  std::unique_ptr<asio::io_context> ioc;
  std::unique_ptr<SshEndpoints> ssh_endpoints;  // while the server runs
  std::unique_ptr<VmProxy> vm_proxy;            // while the server runs
  std::uint16_t vm_proxy_port = 0;              // kept across restart()
  std::optional<tcp::acceptor> acceptor;
  std::thread thread;
  std::uint16_t port = 0;
  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> open{0};
  std::mutex processes_mutex;
  std::vector<std::weak_ptr<SshProcess>> processes;

  void start();
  void stop();
  /// `GET /.well-known/ssh-known-hosts`: the @cert-authority line (needs ssh_server).
  Reply known_hosts_reply() const;

  /// Runs `action` (which uses the lobby) on the server's thread and returns its result: the
  /// lobby has no lock, so while the server runs only its thread touches the lobby and the host
  /// work it plans. Outside (starting, stopping) or on that thread, runs it at once.
  template <typename Action>
  auto with_lobby(Action action) -> decltype(action()) {
    if (!thread.joinable() || ioc->get_executor().running_in_this_thread()) return action();
    std::packaged_task<decltype(action())()> task(std::move(action));
    auto result = task.get_future();
    asio::post(*ioc, [&task] { task(); });
    return result.get();
  }

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(tcp::socket socket);
  template <typename Stream>
  asio::awaitable<void> session(Stream& stream);
  template <typename Stream>
  asio::awaitable<bool> handle_exec(Stream& stream, beast::flat_buffer& buffer, http::request_parser<http::string_body>& parser);
  // The command's process, kept where stop() finds it; nullptr, and why, when it cannot start.
  std::shared_ptr<SshProcess> start_ssh_process(const SshPlan& plan, std::string& spawn_error);
  template <typename Stream>
  asio::awaitable<bool> run_ssh(Stream& stream, const http::request<http::string_body>& request, const SshPlan& plan,
                                const std::optional<Fault>& fault, CommandRecord& record);
};

template <typename Stream>
tcp::socket& socket_of(Stream& stream) {
  return beast::get_lowest_layer(stream).socket();
}

// Closes with a TCP RST, as a crashed proxy or server would.
template <typename Stream>
void reset(Stream& stream) {
  boost::system::error_code ignored;
  socket_of(stream).set_option(asio::socket_base::linger(true, 0), ignored);
  socket_of(stream).close(ignored);
}

template <typename Stream>
asio::awaitable<bool> write_reply(Stream& stream, const Reply& reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> response{static_cast<http::status>(reply.status), version};
  for (const auto& [name, value] : reply.headers) response.set(name, value);
  response.body() = reply.body;
  response.keep_alive(keep_alive);
  response.prepare_payload();
  const auto [ec, n] = co_await http::async_write(stream, response, use_tuple);
  co_return !ec && keep_alive;
}

}  // namespace exedev::emulator
