#pragma once
// The emulator's HTTPS proxy: exe.dev serves each VM at https://<vm>.exe.xyz/ (its proxy port)
// and https://<vm>.exe.xyz:<3000-9999>/; the emulator serves those URLs on one loopback port.
// A client connects there (the host name as TLS SNI and in Host; the emulator's certificate
// covers *.exe.xyz), the proxy reads the request head, asks the lobby whether and where the
// request goes (Lobby::proxy_decision) and relays the connection to 127.0.0.1:<VM port>, where
// the VM's processes listen. Runs on the emulator's io_context.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <cstdint>

namespace exedev::emulator {

class Lobby;

class VmProxy {
 public:
  /// Listens on 127.0.0.1:`port` (0: a port the system picks, or when `port` is taken).
  VmProxy(boost::asio::io_context& ioc, Lobby& lobby, boost::asio::ssl::context& tls, std::uint16_t port);
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// Closes the listener (on the io_context's thread); connections end with the io_context.
  void stop();

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  Lobby& lobby_;
  boost::asio::ssl::context& tls_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
};

}  // namespace exedev::emulator
