#pragma once
// PortForward: a port of a VM reached from this machine (SandboxBackend::forward_port).

#include <cstdint>
#include <memory>
#include <string>

namespace exedev {

namespace ssh {
class PortForwarder;
}

/// A listener on 127.0.0.1 (a port the system picked) whose every connection is carried to a
/// port on the VM over the backend's SSH connection, each on a channel of its own. It serves
/// for as long as this handle lives: destroying it (or close()) closes the listener and every
/// connection through it at once. It is bound to the SSH connection it was opened on: once that
/// connection has dropped or closed (SandboxBackend::close), connections to the local port are
/// closed at once and is_open() turns false; call forward_port again for a new one. Use it on
/// the backend's executor.
class PortForward {
 public:
  /// Made by SandboxBackend::forward_port.
  explicit PortForward(std::shared_ptr<ssh::PortForwarder> forwarder);
  ~PortForward();
  PortForward(PortForward&&) noexcept;
  PortForward& operator=(PortForward&&) noexcept;
  PortForward(const PortForward&) = delete;
  PortForward& operator=(const PortForward&) = delete;

  /// "127.0.0.1".
  [[nodiscard]] static std::string local_host() { return "127.0.0.1"; }
  /// The local port to connect to.
  [[nodiscard]] std::uint16_t local_port() const noexcept;
  /// The VM's port the connections reach.
  [[nodiscard]] std::uint16_t remote_port() const noexcept;
  /// "http://127.0.0.1:<local_port>", for a forwarded HTTP service.
  [[nodiscard]] std::string local_url() const;
  /// Connections being carried now.
  [[nodiscard]] std::size_t active_connections() const noexcept;
  /// False once closed, or once the SSH connection it uses has ended.
  [[nodiscard]] bool is_open() const noexcept;
  /// Closes the listener and every connection through it (their channels close in the
  /// background). Idempotent; never throws.
  void close() noexcept;

 private:
  std::shared_ptr<ssh::PortForwarder> forwarder_;
};

}  // namespace exedev
