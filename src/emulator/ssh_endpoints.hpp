#pragma once
// SshEndpoints: the SSH endpoints, exe.dev's front as the client meets it (ADR 14): one loopback
// port per shard (`shard-<n>`, shared by both accounts' VMs of that shard) and one for `vm+<name>`
// (`names`), on which the emulator accepts connections (on the server's io_context) and relays
// their bytes to the private sshd (ssh_server.hpp). Before connecting to sshd, the relay binds its
// socket and writes `connections/<its local port>`: the endpoint port the client came in on, which
// sshd's key script reads to route the connection by its first key; the script writes the route
// `routes/<that port>`. Both go when the connection ends.
//
// Pause, restart and rm close the connections whose route names the VM (disconnect); rm of a
// shard's last VM closes its endpoint (close). The `latency` mode delays each direction's bytes
// by half the latency, so a round trip costs `latency`, as one /exec request does.
//
// Thread safety: open, disconnect and close may be called from any thread (the lobby's host
// work runs on the server's thread, and before it starts or after it stops); the relay itself
// runs on the io_context's one thread, the lobby's strand, where it reads the lobby's modes.

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
