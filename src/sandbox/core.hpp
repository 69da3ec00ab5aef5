#pragma once
// What VMs, SandboxBackend and Sandbox share: the client a component owns, cancellation,
// access errors, scope checks and readiness waits. Provisioning: sandbox/provision.hpp.

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <exedev/client.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vm_state.hpp>
#include <exedev/sandbox/vms.hpp>

#include "common/coroutines.hpp"

namespace exedev::detail {

/// A one-word list. (GCC 12 miscompiles braced initializer lists inside coroutines.)
[[nodiscard]] inline std::vector<std::string> one(std::string word) {
  std::vector<std::string> words;
  words.push_back(std::move(word));
  return words;
}

// (was_cancelled, throw_if_cancelled and throw_cancelled: common/coroutines.hpp; throw_nested:
// common/exceptions.hpp.)

/// Raises what an operation followed by a close ends with: the operation's error, else the
/// close's. When the operation was cancelled and the close failed, the cancellation is raised
/// with the close's error nested (the seed's close contract). Returns when neither failed.
void raise_after_close(std::exception_ptr error, std::exception_ptr close_error);

/// The lobby commands VMs sends (new or cp, tag, comment and ssh to get a VM ready, ls, pause
/// after an ssh `sync`, resume, rm), and SandboxBackend's (the same without pause, plus whoami:
/// the account's keys for SSH, and share show: served URLs). docs/client.md, "What a token
/// allows".
[[nodiscard]] const std::vector<std::string>& vms_commands();
[[nodiscard]] const std::vector<std::string>& sandbox_backend_commands();
/// `options`, whose minted tokens allow exactly `commands` when it mints and TokenMinting::cmds
/// names none (a caller's list is kept).
[[nodiscard]] ClientOptions with_minted_commands(ClientOptions options, const std::vector<std::string>& commands);

/// A client given by the user (never closed) or made on first use (closed by close()).
class ClientHolder {
 public:
  ClientHolder(std::optional<Client> given, ClientOptions options);
  Task<Client> get();
  /// Closes a made client; shielded once started; the cancellation is raised afterwards.
  Task<void> close();

 private:
  std::optional<Client> given_;
  std::optional<Client> made_;
  ClientOptions options_;
};

/// Whether exe.dev refused a command by the token's tag scope (a 422, unlike the 403 of `cmds`).
[[nodiscard]] bool is_scope_refusal(const APIError& error);

/// Rethrows `error`, turning 401 / 403 / no-token client errors and tag-scope refusals into
/// ExeDevAccessError (status 403 for both kinds of "may not run"), its message starting with
/// `context` when given.
[[noreturn]] void rethrow_access_mapped(std::exception_ptr error, const std::string& context = {});

/// Whether a create/copy failure leaves it unknown whether the VM exists.
[[nodiscard]] bool is_unknown_create_outcome(const std::exception_ptr& error);

/// `ls <name>`: the VM, or VMNotFoundError; VMOutOfScopeError when it lacks the scope tag.
Task<VMInfo> find_in_scope(Client client, std::string name, std::optional<std::string> scope_tag);

/// Probes `echo <unique-token>` until the VM's shell answers it, retrying every poll_interval
/// on connection-level and not-ready errors, lost or unreadable probe results, until timeout.
Task<void> wait_ready(Client client, std::string name, ReadinessOptions readiness);

/// Refuses a copy without its base's tags under a scope tag (std::invalid_argument).
void check_spec_scope(const VMSpec& spec, const std::optional<std::string>& scope_tag);

}  // namespace exedev::detail
