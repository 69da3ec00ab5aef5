#pragma once
// Sandbox: gives each agent run its workspace on an exe.dev VM.
//
//   Sandbox sandbox({.spec = VMSpec({.image = "ubuntu:24.04", .working_dir = "app"}),
//                    .scope_tag = "agents"});
//   co_await sandbox.with_run(std::nullopt, [&](SandboxRun& run) -> Task<void> {
//     co_await run.workspace->run(workspace::Command::argv({"make", "test"}));
//     saved_ref = run.backend->ref();
//   });
//   // Later, on the same VM:
//   co_await sandbox.with_run(saved_ref, ...);
//
// A run with no ref provisions a VM from the spec on its first workspace operation; a run given
// a WorkspaceRef attaches to that VM; fresh=true ignores the ref and provisions a new one.
// Ending a run closes the client of the backend it built, however the run ends; it never
// deletes the VM, and never closes a workspace another run handed in (don't pass a parent's
// SandboxRun to finish_run).

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <exedev/coawait_guard.hpp>
#include <exedev/client.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vms.hpp>
#include <exedev/workspace/types.hpp>
#include <exedev/workspace/workspace.hpp>

namespace exedev {

struct SandboxOptions {
  VMSpec spec{};
  std::optional<std::string> scope_tag{};
  workspace::Env env{};
  /// Shared by every run and never closed for you; without it, each run's backend makes (and
  /// closes) its own.
  std::optional<Client> client{};
  ClientOptions client_options{};
  ReadinessOptions readiness{};
  /// Each run's backend's transport, SSH options and log (SandboxBackendOptions).
  Transport transport = Transport::automatic;
  SshOptions ssh{};
  Logger logger{};
  EXEDEV_COAWAIT_GUARD;
};

/// One run's workspace.
struct SandboxRun {
  std::shared_ptr<SandboxBackend> backend;
  std::shared_ptr<workspace::Workspace> workspace;
};

class Sandbox {
 public:
  /// No I/O; validates like SandboxBackend.
  explicit Sandbox(SandboxOptions options);
  Sandbox(VMSpec spec, std::optional<std::string> scope_tag, workspace::Env env = {},
          std::optional<Client> client = std::nullopt);

  /// A workspace for a run: attaches to `ref` if given (unless `fresh`), else a VM provisioned
  /// on first use. No I/O; throws std::invalid_argument for a ref of another provider.
  [[nodiscard]] SandboxRun open_run(std::optional<workspace::WorkspaceRef> ref = std::nullopt, bool fresh = false) const;

  /// Ends a run opened by open_run: closes its backend (see SandboxBackend::close for the
  /// cancellation rules). The VM is kept; run.backend->ref() still names it.
  Task<void> finish_run(SandboxRun& run) const;

  /// open_run, then `body`, then finish_run however the body ends; rethrows the body's error
  /// (a close error is then dropped in its favour, except that a cancelled body raises the
  /// cancellation with the close's error nested), else the close's. A failed close keeps the
  /// run's client: finish_run(run) again retries (with_run's run is gone; its backend's ref
  /// still names the VM).
  Task<void> with_run(std::optional<workspace::WorkspaceRef> ref, std::function<Task<void>(SandboxRun&)> body,
                      bool fresh = false) const;

  /// A manager with this sandbox's client and scope tag (it makes its own client when the
  /// sandbox has none; close() it).
  [[nodiscard]] VMs vms() const;

  /// Deletes the VM directly: true if this call deleted it. Scope rules as VMs::destroy.
  Task<bool> destroy(workspace::WorkspaceRef ref) const;

  [[nodiscard]] const SandboxOptions& options() const noexcept { return options_; }

 private:
  SandboxOptions options_;
  // Every run's backend skips an SSH endpoint that another run found unanswering lately.
  SshEndpointMemory ssh_endpoints_;
};

}  // namespace exedev
