#include "emulator/ssh_endpoints.hpp"


#include "common/event.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <fstream>
#include <iostream>
#include <utility>
#include <vector>

namespace exedev::emulator {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_queued_bytes = 4u << 20;  // per direction, while the latency holds bytes back
constexpr auto sshd_start_bound = std::chrono::seconds(10);
constexpr auto sshd_start_poll = std::chrono::milliseconds(5);

// One direction of a relayed connection: what was read, each piece with the time it may be sent.
struct Pipe {
  std::deque<std::pair<Clock::time_point, std::string>> queue;
  std::size_t queued = 0;
  bool ended = false;  // the reading side saw EOF
  detail::Event changed;
};

}  // namespace

struct SshEndpoints::Connection {
  explicit Connection(asio::io_context& ioc) : client(ioc), upstream(ioc) {}
  ~Connection() {
    std::error_code ignored;
    for (const auto& file : files) {
      std::filesystem::remove(file, ignored);
      std::filesystem::remove(file.string() + ".key", ignored);
      std::filesystem::remove(file.string() + ".tmp", ignored);
    }
  }

  /// Whether the key script routed it to the VM (its route names the VM's id).
  bool landed_on(const std::string& vm_id) const {
    if (route.empty()) return false;
    std::ifstream in(route);
    const std::string wanted = "vm_id='" + vm_id + "'";
    for (std::string line; std::getline(in, line);) {
      if (line == wanted) return true;
    }
    return false;
  }

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
    to_upstream.changed.notify();
    to_client.changed.notify();
  }

  tcp::socket client;
  tcp::socket upstream;
  std::filesystem::path route;                   // where the key script writes its decision
  std::vector<std::filesystem::path> files;      // of this connection, removed with it
  Pipe to_upstream;
  Pipe to_client;
  bool closed = false;
};

struct SshEndpoints::Listener {
  Listener(asio::io_context& ioc, std::string name) : endpoint(std::move(name)), acceptor(ioc) {}

  // On the io_context's thread: every connection, or those that landed on the VM.
  void close_connections(const std::string* landed_on = nullptr) {
    for (const auto& weak : connections) {
      auto connection = weak.lock();
      if (connection && (landed_on == nullptr || connection->landed_on(*landed_on))) connection->close();
    }
    std::erase_if(connections, [](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
  }
  void add(const std::shared_ptr<Connection>& connection) {
    std::erase_if(connections, [](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
    connections.push_back(connection);
  }

  std::string endpoint;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;
  std::vector<std::weak_ptr<Connection>> connections;  // on the io_context's thread only
};

namespace {

using Connection = SshEndpoints::Connection;

// Reads `from` into the pipe, each piece held back by half the latency mode's value.
asio::awaitable<void> read_side(std::shared_ptr<Connection> connection, tcp::socket& from, Pipe& pipe, Lobby& lobby) {
  std::array<char, 64 * 1024> buffer;
  while (!connection->closed) {
    if (pipe.queued >= max_queued_bytes) {
      co_await pipe.changed.wait();
      continue;
    }
    const auto [ec, n] = co_await from.async_read_some(asio::buffer(buffer), use_tuple);
    if (n > 0) {
      const auto delay = lobby.modes().latency / 2;
      pipe.queue.emplace_back(Clock::now() + delay, std::string(buffer.data(), n));
      pipe.queued += n;
    }
    if (ec) {
      if (ec == asio::error::eof) pipe.ended = true;
      else connection->close();
    }
    pipe.changed.notify();
    if (ec) break;
  }
}

// Writes the pipe's pieces to `to` once each is due; after the reading side's EOF, half-closes.
asio::awaitable<void> write_side(std::shared_ptr<Connection> connection, tcp::socket& to, Pipe& pipe) {
  asio::steady_timer timer(to.get_executor());
  while (!connection->closed) {
    if (pipe.queue.empty()) {
      if (pipe.ended) {
        boost::system::error_code ignored;
        to.shutdown(tcp::socket::shutdown_send, ignored);
        break;
      }
      co_await pipe.changed.wait();
      continue;
    }
    const auto due = pipe.queue.front().first;
    if (due > Clock::now()) {
      timer.expires_at(due);
      co_await timer.async_wait(use_tuple);
      continue;
    }
    const auto [ec, n] = co_await asio::async_write(to, asio::buffer(pipe.queue.front().second), use_tuple);
    if (ec) {
      connection->close();
      break;
    }
    pipe.queued -= pipe.queue.front().second.size();
    pipe.queue.pop_front();
    pipe.changed.notify();
  }
}

}  // namespace

SshEndpoints::SshEndpoints(asio::io_context& ioc, Lobby& lobby, SshServer& server, std::filesystem::path known_hosts)
    : ioc_(ioc), lobby_(lobby), server_(server) {
  // Replaced at once: a client reading it never sees half a file.
  const auto temporary = known_hosts.string() + ".tmp";
  std::ofstream(temporary, std::ios::trunc) << server_.known_hosts_text();
  std::error_code ignored;
  std::filesystem::rename(temporary, known_hosts, ignored);
}

SshEndpoints::~SshEndpoints() = default;

std::uint16_t SshEndpoints::open(const std::string& endpoint, std::uint16_t port) {
  std::lock_guard lock(mutex_);
  if (const auto it = listeners_.find(endpoint); it != listeners_.end()) return it->second->port;
  auto listener = std::make_shared<Listener>(ioc_, endpoint);
  const auto listen_on = [&](std::uint16_t wanted) {
    boost::system::error_code ec;
    listener->acceptor.open(tcp::v4(), ec);
    if (!ec) listener->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) listener->acceptor.bind(tcp::endpoint(asio::ip::address_v4::loopback(), wanted), ec);
    if (!ec) listener->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      boost::system::error_code ignored;
      listener->acceptor.close(ignored);
    }
    return ec;
  };
  // The port the VM had, so that it stays across restarts; another one if it is taken now.
  auto failed = listen_on(port);
  if (failed && port != 0) failed = listen_on(0);
  if (failed) {
    std::cerr << "exedev-emulator: no SSH endpoint " << endpoint << ": " << failed.message() << "\n";
    return 0;
  }
  listener->port = listener->acceptor.local_endpoint().port();
  listeners_[endpoint] = listener;
  asio::co_spawn(ioc_, accept_loop(listener), asio::detached);
  return listener->port;
}

void SshEndpoints::disconnect(const std::string& vm_id) {
  std::lock_guard lock(mutex_);
  // Any endpoint may carry connections that landed on the VM (vm+ names it from anywhere).
  for (const auto& [id, listener] : listeners_) {
    asio::post(ioc_, [listener = listener, vm_id] { listener->close_connections(&vm_id); });
  }
}

void SshEndpoints::close(const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  const auto it = listeners_.find(endpoint);
  if (it == listeners_.end()) return;
  auto listener = std::move(it->second);
  listeners_.erase(it);
  asio::post(ioc_, [listener = std::move(listener)] {
    boost::system::error_code ignored;
    listener->acceptor.close(ignored);
    listener->close_connections();
  });
}

asio::awaitable<void> SshEndpoints::accept_loop(std::shared_ptr<Listener> listener) {
  while (true) {
    auto [ec, socket] = co_await listener->acceptor.async_accept(use_tuple);
    if (ec) {
      if (!listener->acceptor.is_open()) co_return;
      continue;  // e.g. EMFILE: keep serving the connections there are
    }
    asio::co_spawn(ioc_, relay(listener, std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> SshEndpoints::relay(std::shared_ptr<Listener> listener, tcp::socket client) {
  boost::system::error_code ignored;
  // Where the connection lands (a VM, the lobby shell, or denied) is the key script's decision,
  // at authentication: sshd is the front.
  auto connection = std::make_shared<Connection>(ioc_);
  connection->client = std::move(client);
  connection->client.set_option(tcp::no_delay(true), ignored);
  listener->add(connection);  // from now on pause, restart and rm close it
  if (lobby_.modes().ssh_silent) {
    // Accepted, never answered: the client's bytes are dropped until it gives up.
    std::array<char, 4096> dropped;
    while (!connection->closed) {
      const auto [ec, n] = co_await connection->client.async_read_some(asio::buffer(dropped), use_tuple);
      if (ec) break;
    }
    connection->close();
    co_return;
  }
  try {
    server_.ensure_running();
  } catch (const std::exception& e) {
    std::cerr << "exedev-emulator: cannot serve SSH: " << e.what() << "\n";
    connection->close();
    co_return;
  }
  const tcp::endpoint sshd(asio::ip::address_v4::loopback(), server_.port());
  const auto give_up = Clock::now() + sshd_start_bound;
  asio::steady_timer pause_between(ioc_);
  // sshd may have been started just now: until it listens, a connect is refused.
  while (!connection->closed) {
    tcp::socket upstream(ioc_);
    upstream.open(tcp::v4(), ignored);
    upstream.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0), ignored);
    const auto local = upstream.local_endpoint(ignored);
    if (ignored) break;
    // For the key script: which endpoint the client came in on. A route left by an earlier
    // connection from the same port is stale.
    const auto connection_file = server_.connection_file(local.port());
    const auto route_file = server_.route_file(local.port());
    std::error_code removal;
    for (const auto& stale : {route_file, std::filesystem::path(route_file.string() + ".key")}) std::filesystem::remove(stale, removal);
    std::ofstream(connection_file, std::ios::trunc) << listener->port << "\n";
    const auto [ec] = co_await upstream.async_connect(sshd, use_tuple);
    if (!ec && !connection->closed) {
      upstream.set_option(tcp::no_delay(true), ignored);
      connection->upstream = std::move(upstream);
      connection->route = route_file;
      connection->files = {connection_file, route_file};
      break;
    }
    std::filesystem::remove(connection_file, removal);
    if (ec != asio::error::connection_refused || Clock::now() > give_up || !server_.running()) break;
    pause_between.expires_after(sshd_start_poll);
    co_await pause_between.async_wait(use_tuple);
  }
  if (connection->route.empty()) {
    connection->close();
    co_return;
  }
  auto& to_upstream = connection->to_upstream;
  auto& to_client = connection->to_client;
  asio::co_spawn(ioc_, read_side(connection, connection->client, to_upstream, lobby_), asio::detached);
  asio::co_spawn(ioc_, write_side(connection, connection->upstream, to_upstream), asio::detached);
  asio::co_spawn(ioc_, read_side(connection, connection->upstream, to_client, lobby_), asio::detached);
  asio::co_spawn(ioc_, write_side(connection, connection->client, to_client), asio::detached);
}

}  // namespace exedev::emulator
