#pragma once
// SshEndpoints: every VM's SSH endpoint. Each VM has a loopback port of its own on which the
// emulator accepts connections (on the server's io_context) and relays their bytes to the
// private sshd (ssh_server.hpp). Before connecting to sshd, the relay binds its socket, writes
// the route `routes/<its local port>` naming the VM's session, and removes it when the
// connection ends: sshd's ForceCommand wrapper finds the VM by that port (SSH_CONNECTION).
//
// The relay is where the lobby's decisions about SSH take effect: a connection to a VM that is
// paused, booting or gone is accepted and closed at once (the endpoint serves no SSH: the client
// sees the connection closed before the SSH banner); pause, restart and rm close the VM's
// connections; rm closes the endpoint. The `latency` mode delays each direction's bytes by half
// the latency, so a round trip costs `latency`, as one /exec request does.
//
// Thread safety: open, disconnect and close may be called from any thread (the lobby's host
// work runs on the server's thread, and before it starts or after it stops); the relay itself
// runs on the io_context's one thread, the lobby's strand, where it asks the lobby for routes.

#include "emulator/lobby.hpp"
#include "emulator/ssh_server.hpp"
#include "emulator/vm_host.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace exedev::emulator {

class SshEndpoints final : public SshEndpointService {
 public:
  /// `server` and `lobby` must outlive it; writes `known_hosts` (the host key for every endpoint).
  SshEndpoints(boost::asio::io_context& ioc, Lobby& lobby, SshServer& server, std::filesystem::path known_hosts);
  ~SshEndpoints() override;

  std::uint16_t open(const std::string& endpoint, std::uint16_t port) override;
  void disconnect(const std::string& vm_id) override;
  void close(const std::string& endpoint) override;

  struct Listener;
  struct Connection;

 private:
  boost::asio::awaitable<void> accept_loop(std::shared_ptr<Listener> listener);
  boost::asio::awaitable<void> relay(std::shared_ptr<Listener> listener, boost::asio::ip::tcp::socket client);

  boost::asio::io_context& ioc_;
  Lobby& lobby_;
  SshServer& server_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Listener>> listeners_;  // by endpoint
};

}  // namespace exedev::emulator
