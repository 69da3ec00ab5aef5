#pragma once
// A SandboxBackend's route to its VM's shell and files: one SSH connection (opened on first
// use, shared by every operation as channels, reopened after a drop) or exe.dev's /exec. The
// route makes one attempt at a time and remembers what was decided; what a failure means and
// what to do next is the recovery policy's (route_recovery.hpp), carried out by the backend's
// one loop (sandbox_backend.cpp). The choice is logged once and changes only between attempts
// (docs/sandbox.md, "Transports"). Lifecycle never goes through it: it always uses the client.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>

#include "common/event.hpp"
#include "sandbox/provision.hpp"
#include "sandbox/route_recovery.hpp"
#include "ssh/connection.hpp"

namespace exedev::detail {

/// What an SshEndpointMemory holds: the sans-IO memory, behind a lock (backends on several
/// threads may share it).
struct SharedEndpointMemory {
  std::mutex mutex;
  UnansweredEndpoints endpoints;
};

class VmRoute {
 public:
  VmRoute(Transport transport, SshOptions ssh, std::shared_ptr<SharedEndpointMemory> memory, Logger logger);

  /// The connection to the VM `target` names, or nullptr to use /exec: the open one, else one
  /// opening (concurrent callers share it and all get its failure). Without a usable key or an
  /// SSH host for the VM, `automatic` chooses /exec (logged) and `ssh` throws. An endpoint that
  /// timed out lately (the shared memory) throws ConnectionError(timed_out) without connecting.
  /// Otherwise throws what the opening threw; one whose connect or handshake timed out is noted
  /// in the shared memory first. Cancellation: the opening is abandoned (the next call starts
  /// again).
  Task<std::shared_ptr<ssh::Connection>> connection(Client client, ProvisionSubject& target);

  /// The SFTP session of `connection` (the route's current one), opened on first use; nullptr
  /// once the connection is known to serve none (without_sftp). Throws what the opening threw.
  Task<std::shared_ptr<ssh::Sftp>> sftp(std::shared_ptr<ssh::Connection> connection);

  /// /exec from now on; `reason` is logged once.
  void fall_back(const std::string& reason);
  /// The next attempt connects again after `delay`: `why` (the last failure) is logged (debug),
  /// so that a VM whose name does not resolve yet shows why its first operation waits.
  void reconnecting(const std::string& why, std::chrono::milliseconds delay) const;
  /// The current connection serves no SFTP (logged once): file data travels through scripts.
  void without_sftp(const std::string& vm_name);
  /// Forgets a connection that failed under an operation, so the next attempt reconnects.
  void drop(const std::shared_ptr<ssh::Connection>& connection);

  [[nodiscard]] std::optional<Transport> in_use() const noexcept;
  [[nodiscard]] Transport configured() const noexcept { return transport_; }
  [[nodiscard]] const SshRecoveryOptions& limits() const noexcept { return ssh_.recovery; }
  /// The SFTP session is open on the current connection, and that connection stands.
  [[nodiscard]] bool sftp_open() const noexcept;
  /// The last endpoint tried as exe.dev named it ("[user@]host[:port]", for messages), empty
  /// before any.
  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }

  /// Closes the connection, if any (the route is decided again on next use).
  Task<void> close();

 private:
  Task<std::shared_ptr<ssh::Connection>> open(Client client, ProvisionSubject& target);
  /// The account's SSH keys from `whoami`, once per route (Client::account() asks once per client).
  Task<void> learn_account_keys(Client& client);
  void choose_exec(const std::string& reason);
  /// The last opening's endpoint did not answer: remembered for the backends sharing the memory.
  void note_unanswered();
  void log(LogLevel level, const std::string& line) const;

  Transport transport_;
  SshOptions ssh_;
  std::shared_ptr<SharedEndpointMemory> memory_;
  Logger logger_;
  std::optional<Transport> in_use_;
  std::shared_ptr<ssh::Connection> connection_;
  std::shared_ptr<ssh::Sftp> sftp_;
  bool sftp_refused_ = false;
  std::string endpoint_;
  // Learned on the first opening: the account's keys (nullopt: unknown, keys go in order) and the
  // VM's route mark (route_proof.hpp).
  bool account_keys_learned_ = false;
  std::optional<ssh::AccountKeys> account_keys_;
  std::optional<std::string> route_mark_;  // user@host:port, for messages
  std::string memory_key_;  // host:port, the memory's key
  bool opening_ = false;
  std::exception_ptr opening_failure_;  // what the last shared opening threw, for those who waited
  Event opened_;
};

}  // namespace exedev::detail
