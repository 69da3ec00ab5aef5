#pragma once
// What the lobby asks of the machine it emulates VMs on: the VMs' directories, their processes
// and the persisted state. The lobby (lobby.hpp) decides and answers a plan of HostCommands, plain
// data; the server runs each plan on a VmHost (run_host_plan), in the order the plans were made.
// FileVmHost is the real host; the unit tests use an in-memory fake.

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

namespace exedev::emulator {

/// The VMs' SSH endpoints as a host reaches them (SshEndpoints, ssh_endpoints.hpp). Every member
/// may be called from any thread.
class SshEndpointService {
 public:
  virtual ~SshEndpointService() = default;
  /// Serves the endpoint (a shard's, `shard-<n>`, or the name endpoint, `names`) on `port` (0,
  /// or a port no longer free: another one) unless it is served, and returns the port it
  /// listens on; 0 when no SSH can be served.
  virtual std::uint16_t open(const std::string& endpoint, std::uint16_t port) = 0;
  /// Closes the SSH connections that landed on the VM; the endpoints stay (pause, restart, rm).
  virtual void disconnect(const std::string& vm_id) = 0;
  /// Closes the endpoint and its connections (rm of the last VM on a shard).
  virtual void close(const std::string& endpoint) = 0;
};

class VmHost {
 public:
  virtual ~VmHost() = default;

  /// Where the VM with this id keeps its files (its home is `<dir>/home`). Computes, touches nothing.
  virtual std::filesystem::path vm_directory(const std::string& vm_id) const = 0;
  /// Where the state is persisted, for error messages. Computes, touches nothing.
  virtual std::filesystem::path state_file() const = 0;

  /// The persisted state as written by save_state(), or nullopt when none was ever saved.
  virtual std::optional<std::string> load_state() = 0;
  /// Replaces the persisted state at once (a crash never leaves half of it). Throws on failure.
  virtual void save_state(const std::string& text) = 0;

  /// Makes `dir` and `dir/home` (a new VM). Throws on failure.
  virtual void create_vm_directory(const std::filesystem::path& dir) = 0;
  /// Copies a VM's directory to a new one (cp); on failure leaves nothing at `to` and returns why.
  virtual std::error_code copy_vm_directory(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  /// Deletes a VM's directory and everything in it; a missing one is no error.
  virtual void remove_vm_directory(const std::filesystem::path& dir) = 0;

  /// Stops every process of the VM and returns once each is stopped or gone (pause).
  virtual void stop_vm_processes(const std::string& vm_id) = 0;
  /// Lets the stopped processes of the VM run again (resume, ssh to a paused VM).
  virtual void continue_vm_processes(const std::string& vm_id) = 0;
  /// Kills every process of the VM (rm, restart, shutdown).
  virtual void kill_vm_processes(const std::string& vm_id) = 0;

  /// Replaces the SSH landing table (files by relative path: what sshd's key script reads to
  /// route a connection, ssh_server.hpp) at once. Throws on failure.
  virtual void save_ssh_landing(const std::map<std::string, std::string>& files) = 0;
  /// Serves an SSH endpoint (see SshEndpointService::open); 0 when the host serves none.
  virtual std::uint16_t open_ssh_endpoint(const std::string& endpoint, std::uint16_t port) = 0;
  /// Closes the SSH connections that landed on the VM (pause, restart, rm).
  virtual void close_ssh_connections(const std::string& vm_id) = 0;
  /// Closes an SSH endpoint and its connections.
  virtual void close_ssh_endpoint(const std::string& endpoint) = 0;
};

// ---------------------------------------------------------------------------------------------
// Host commands: one per blocking VmHost operation the lobby plans, compared by value in tests.

/// Makes `dir` and `dir/home` (new).
struct CreateVmDirectory {
  std::filesystem::path dir;
  bool operator==(const CreateVmDirectory&) const = default;
};
/// Copies a VM's directory to a new one (cp); reports the error that left nothing at `to`.
struct CopyVmDirectory {
  std::filesystem::path from;
  std::filesystem::path to;
  bool operator==(const CopyVmDirectory&) const = default;
};
struct RemoveVmDirectory {
  std::filesystem::path dir;
  bool operator==(const RemoveVmDirectory&) const = default;
};
struct StopVmProcesses {
  std::string vm_id;
  bool operator==(const StopVmProcesses&) const = default;
};
struct ContinueVmProcesses {
  std::string vm_id;
  bool operator==(const ContinueVmProcesses&) const = default;
};
struct KillVmProcesses {
  std::string vm_id;
  bool operator==(const KillVmProcesses&) const = default;
};
/// Replaces the persisted state with `text`, the state as it was when the plan was made, and
/// the SSH landing table derived from it (Lobby::ssh_landing_table).
struct SaveState {
  std::string text;
  std::map<std::string, std::string> ssh_landing;
  bool operator==(const SaveState&) const = default;
};
/// Serves an SSH endpoint (`shard-<n>`, `names`) on `port` (0: any); reports the port it got.
struct OpenSshEndpoint {
  std::string endpoint;
  std::uint16_t port = 0;
  bool operator==(const OpenSshEndpoint&) const = default;
};
struct CloseSshConnections {
  std::string vm_id;
  bool operator==(const CloseSshConnections&) const = default;
};
struct CloseSshEndpoint {
  std::string endpoint;
  bool operator==(const CloseSshEndpoint&) const = default;
};

using HostCommand = std::variant<CreateVmDirectory, CopyVmDirectory, RemoveVmDirectory, StopVmProcesses,
                                 ContinueVmProcesses, KillVmProcesses, SaveState, OpenSshEndpoint,
                                 CloseSshConnections, CloseSshEndpoint>;
/// Host commands to run in order.
using HostPlan = std::vector<HostCommand>;

/// What a host command reports back: the error of a failed CopyVmDirectory, the port an
/// OpenSshEndpoint got; nothing for the others.
struct HostResult {
  std::error_code error;
  std::uint16_t ssh_port = 0;
  bool operator==(const HostResult&) const = default;
};

/// Runs one command on `host`. Throws what the host throws.
HostResult run_host_command(VmHost& host, const HostCommand& command);
/// Runs the plan's commands in order; returns their results, one per command.
std::vector<HostResult> run_host_plan(VmHost& host, const HostPlan& plan);

/// The host of a real emulator: a state directory (`emulator-state.json`, `vms/<id>/`) and the
/// processes found by their EXEDEV_EMULATOR_VM marker (processes.hpp).
class FileVmHost final : public VmHost {
 public:
  /// Creates `<state_dir>/vms` if missing.
  explicit FileVmHost(std::filesystem::path state_dir);

  std::filesystem::path vm_directory(const std::string& vm_id) const override;
  std::filesystem::path state_file() const override;
  std::optional<std::string> load_state() override;
  void save_state(const std::string& text) override;
  void create_vm_directory(const std::filesystem::path& dir) override;
  std::error_code copy_vm_directory(const std::filesystem::path& from, const std::filesystem::path& to) override;
  void remove_vm_directory(const std::filesystem::path& dir) override;
  void stop_vm_processes(const std::string& vm_id) override;
  void continue_vm_processes(const std::string& vm_id) override;
  void kill_vm_processes(const std::string& vm_id) override;
  void save_ssh_landing(const std::map<std::string, std::string>& files) override;
  std::uint16_t open_ssh_endpoint(const std::string& endpoint, std::uint16_t port) override;
  void close_ssh_connections(const std::string& vm_id) override;
  void close_ssh_endpoint(const std::string& endpoint) override;

  /// `<state_dir>/ssh/landing`: a symbolic link to the table's current directory, replaced at once.
  std::filesystem::path ssh_landing_link() const;
  /// The SSH endpoints the server serves while it runs (nullptr: none; the SSH calls do nothing).
  void attach_ssh(SshEndpointService* endpoints);

 private:
  std::filesystem::path state_dir_;
  std::mutex ssh_mutex_;
  std::uint64_t landing_version_ = 0;
  SshEndpointService* ssh_ = nullptr;
};

}  // namespace exedev::emulator
