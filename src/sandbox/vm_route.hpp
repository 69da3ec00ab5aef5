#pragma once
// A SandboxBackend's route to its VM's shell and files: one SSH connection (opened on first
// use, shared by every operation as channels, reopened after a drop) or exe.dev's /exec. The
// choice is made here once, logged once, and changed only between commands (docs/sandbox.md,
// "Transports"). Lifecycle never goes through it: it always uses the client.

#include <memory>
#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>

#include "common/event.hpp"
#include "sandbox/provision.hpp"
#include "ssh/connection.hpp"

namespace exedev::detail {

class VmRoute {
 public:
  VmRoute(Transport transport, SshOptions ssh, Logger logger);

  /// The connection to the VM `target` names (ready), or nullptr to use /exec. Concurrent
  /// callers share one attempt. When the endpoint does not answer: a paused VM is resumed once
  /// and connected to again, a removed one is VMNotFoundError; then `automatic` falls back to
  /// /exec (logged) and `ssh` throws the connection's error. Authentication failures fall back
  /// or throw the same way; a changed host key (HostKeyError) is always thrown. Cancellation:
  /// the attempt in progress is abandoned (the next call starts again).
  Task<std::shared_ptr<ssh::Connection>> connection(Client client, ProvisionSubject& target);

  /// The connection's SFTP session, or nullptr when the route is /exec or the VM's sshd refuses
  /// the SFTP subsystem (remembered for this connection).
  Task<std::shared_ptr<ssh::Sftp>> sftp(Client client, ProvisionSubject& target);

  /// Forgets a connection that failed under an operation, so the next one reconnects.
  void drop(const std::shared_ptr<ssh::Connection>& connection);

  [[nodiscard]] std::optional<Transport> in_use() const noexcept;
  /// The SFTP session is open on the current connection, and that connection stands.
  [[nodiscard]] bool sftp_open() const noexcept;

  /// Closes the connection, if any (the route is decided again on next use).
  Task<void> close();

 private:
  Task<std::shared_ptr<ssh::Connection>> open(Client client, ProvisionSubject& target);
  void choose_exec(const std::string& reason);
  void log(LogLevel level, const std::string& line) const;

  Transport transport_;
  SshOptions ssh_;
  Logger logger_;
  std::optional<Transport> in_use_;
  std::shared_ptr<ssh::Connection> connection_;
  std::shared_ptr<ssh::Sftp> sftp_;
  bool sftp_refused_ = false;
  bool opening_ = false;
  Event opened_;
};

}  // namespace exedev::detail
