#pragma once
// A local listener on 127.0.0.1 whose connections reach a port on the VM, each over its own
// direct-tcpip channel of one SSH connection (Connection::forward). Internal: the public handle
// is exedev::PortForward (<exedev/sandbox/port_forward.hpp>). Runs on the connection's executor.

#include "ssh/connection.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace exedev::ssh {

class PortForwarder : public std::enable_shared_from_this<PortForwarder> {
 public:
  /// Listens on 127.0.0.1 at a port the system picks and starts accepting: each connection is
  /// relayed to `host`:`remote_port` as the VM's sshd sees them. No SSH traffic until a
  /// connection arrives. Throws boost::system::system_error when it cannot listen.
  static std::shared_ptr<PortForwarder> start(std::shared_ptr<Connection> connection, std::string host,
                                              std::uint16_t remote_port);

  PortForwarder(std::shared_ptr<Connection> connection, std::string host, std::uint16_t remote_port);

  [[nodiscard]] std::uint16_t local_port() const noexcept { return local_port_; }
  [[nodiscard]] std::uint16_t remote_port() const noexcept { return remote_port_; }
  /// Connections being relayed now.
  [[nodiscard]] std::size_t active_connections() const noexcept { return active_.size(); }
  /// False once stopped or once its SSH connection has dropped or closed (the listener is then
  /// closed at its next connection: that connection is closed at once).
  [[nodiscard]] bool is_open() const noexcept;

  /// Closes the listener and every connection through it (terminal cancellation of each relay:
  /// the local socket closes at once, the channel in the background). Idempotent; no wait.
  void stop();

 private:
  boost::asio::awaitable<void> accept_loop(std::shared_ptr<PortForwarder> self);
  boost::asio::awaitable<void> serve(std::shared_ptr<PortForwarder> self, boost::asio::ip::tcp::socket socket);

  std::shared_ptr<Connection> connection_;
  std::string host_;
  std::uint16_t remote_port_;
  std::uint16_t local_port_ = 0;
  boost::asio::ip::tcp::acceptor acceptor_;
  bool stopped_ = false;
  std::uint64_t last_id_ = 0;
  // One signal per relay, alive until that relay's coroutine has ended (its slot refers to it).
  std::map<std::uint64_t, std::unique_ptr<boost::asio::cancellation_signal>> active_;
};

}  // namespace exedev::ssh
