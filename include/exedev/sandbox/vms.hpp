#pragma once
// VMs: the lifecycle of exe.dev VMs outside (or alongside) an agent run: provision, lookup,
// initialize, inspect, pause, resume, get_vm, destroy.
//
// Scope tag: added to every VM a VMs makes; every operation on a VM you name refuses one without
// it with VMOutOfScopeError (inspect, initialize, pause, resume, get_vm, destroy, and a copy's
// base). It keeps a stale ref or a typo away from your other VMs. It is not authorization: use an
// API token scoped to the same tag to enforce it.
//
// Clients: a VMs given a Client never closes it. Without one, it makes a client (from
// client_options, else EXE_TOKEN / EXE_BASE_URL) on first use, on the caller's executor, and
// close() closes it.
//
// Retries: none of its own, except readiness probes (`echo <token>`), which are re-sent every
// readiness.poll_interval until readiness.timeout (VMsOptions::readiness, ReadinessOptions) on
// connection-level and not-ready errors.
//
// Threading: a VMs is used from one executor (an io_context run by one thread, or a strand).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <exedev/coawait_guard.hpp>
#include <exedev/client.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/sandbox/lookup.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vm_state.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev {

/// How long to wait for a VM to run commands (after a create, a copy or a resume).
struct ReadinessOptions {
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds timeout{90'000};
};

/// A VM named by a WorkspaceRef (provider "exedev") or by its name. Invalid input throws
/// std::invalid_argument when the target is built.
class VMTarget {
 public:
  VMTarget(const workspace::WorkspaceRef& ref);  // NOLINT: implicit by design
  VMTarget(std::string name);                    // NOLINT
  VMTarget(const char* name);                    // NOLINT
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

/// The client and the VM name, for anything VMs does not wrap.
struct VMHandle {
  Client client;
  std::string name;
};

struct VMsOptions {
  std::optional<std::string> scope_tag{};
  /// Used as is and never closed for you.
  std::optional<Client> client{};
  /// Options of the client made on first use when `client` is unset.
  ClientOptions client_options{};
  ReadinessOptions readiness{};
  EXEDEV_COAWAIT_GUARD;
};

/// Every operation raises ExeDevAccessError for a rejected token (401), a command the token may
/// not run (403: not in its `cmds`, or refused by its tag scope, e.g. `pause` and `resume` for a
/// tag-scoped token on exe.dev) or no token, naming the command; provision() lets any other 4xx
/// of a create through as the client's APIError (see there).
/// Where exe.dev's HTTPS proxy serves `port` of a VM whose proxy URL is `https_url`
/// (VMInfo::https_url, ShareInfo::url: https://<vm>.exe.xyz) and whose proxy port is
/// `proxy_port`: "<https_url>/" for the proxy port (the one URL that `share set-public` opens
/// to anyone), "<https_url>:<port>/" for another port in 3000-9999 (people with access only;
/// exe.dev's proxy forwards that range). Throws std::invalid_argument for any other port (move
/// the proxy port there with Client::set_share_port) or an https_url that is not https://<host>.
[[nodiscard]] std::string proxy_url_for_port(const std::string& https_url, std::uint16_t proxy_port, std::uint16_t port);

class VMs {
 public:
  explicit VMs(std::optional<std::string> scope_tag = std::nullopt, std::optional<Client> client = std::nullopt);
  explicit VMs(VMsOptions options);
  ~VMs();
  VMs(VMs&&) noexcept;
  VMs& operator=(VMs&&) noexcept;
  VMs(const VMs&) = delete;
  VMs& operator=(const VMs&) = delete;

  [[nodiscard]] const std::optional<std::string>& scope_tag() const noexcept;

  /// Creates (new) or copies (cp) a VM, waits until it runs commands, sets a copy's tags and
  /// comment, and makes working_dir.
  /// - Result unknown (network error after sending, unreadable response, 5xx, 504):
  ///   ProvisionOutcomeUnknownError; nothing is retried. Recover with lookup(spec).
  /// - A 4xx from create/copy propagates as the client's APIError (e.g. name in use), except a
  ///   refusal by the token's permissions or tag scope: ExeDevAccessError.
  /// - Getting the VM ready fails: VMInitializationError naming the VM, which is kept.
  /// - A copy's base is checked first: VMNotFoundError / VMOutOfScopeError.
  /// - A spec with copy_base_tags=false is refused with std::invalid_argument when this VMs has
  ///   a scope tag (the copy would not get it).
  /// Cancellation: the create/copy request itself is not interrupted (interrupting it would
  /// leave a VM nobody knows of); once it returns, or when cancelled later while the VM is
  /// being made ready, the VM is deleted (that delete also runs to completion) and the
  /// cancellation is then raised. If the delete fails, lookup(spec) finds the VM.
  Task<VMState> provision(VMSpec spec);

  /// Finds the VM a provision of `spec` made. Never creates, resumes or changes a VM. Needs
  /// tags (std::invalid_argument otherwise). Cancellation: nothing to undo.
  Task<LookupResult> lookup(VMSpec spec);

  /// Gets an existing VM ready as provision would: waits until it runs commands, adds the spec's
  /// tags it lacks, sets the spec's comment if it differs, makes working_dir. Safe to repeat;
  /// changes nothing else; never resumes a paused VM. Failures: VMInitializationError.
  /// Cancellation: steps already done stay done; repeat the call.
  Task<VMState> initialize(VMTarget vm, VMSpec spec);

  /// The VM's state (`ls`). VMNotFoundError / VMOutOfScopeError. Cancellation: nothing to undo.
  Task<VMState> inspect(VMTarget vm);

  /// Flushes the VM's filesystems (`sync` on the VM), then pauses it (memory saved to disk, CPU
  /// and memory freed). A paused VM is left as is. Cancellation: the VM may be flushed and not
  /// paused, or paused.
  Task<VMState> pause(VMTarget vm);

  /// Resumes the VM and waits until it runs commands. Cancellation: the VM may be resumed.
  Task<VMState> resume(VMTarget vm);

  /// The client and the VM's name, after the existence and scope check.
  Task<VMHandle> get_vm(VMTarget vm);

  /// Deletes the VM: true if this call deleted it, false if it didn't exist. A VM out of scope
  /// is refused (VMOutOfScopeError). Cancellation: the VM may be deleted; call again to know.
  Task<bool> destroy(VMTarget vm);

  /// The client in use (made on first use when none was given).
  Task<Client> client();

  /// Closes the client this VMs made (never one it was given); never touches a VM. Once the
  /// close has started it finishes before a cancellation reaches the caller; the cancellation
  /// is then raised (operation_aborted, with the close's error nested if it failed). A failed
  /// close keeps the client; calling close() again retries.
  Task<void> close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exedev
