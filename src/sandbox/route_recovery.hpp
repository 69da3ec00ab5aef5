#pragma once
// How an operation on a SandboxBackend's VM recovers from a failure, sans-IO: the one policy of
// the route (sandbox/vm_route.hpp) for every operation (commands, scripts, SFTP reads and writes,
// trees through scripts, port forwards) on both transports. The coroutine in
// sandbox_backend.cpp runs one attempt, classifies its failure by code (run_errors.hpp), asks
// next_action and carries the answer out; every rule lives here and is tested without sockets
// (tests/unit/sandbox/route_recovery_test.cpp). Its limits are SshRecoveryOptions.
//
// The rules:
// - A failure that says nothing about the route (cancelled, refused host key, access, invalid
//   input, a timeout or the output limit of the command itself) ends the operation as it is.
//   A refused host key is never a reason to fall back. Nor is a file operation's deadline
//   (SshOptions::file_operation_timeout) ever a reason to go again: a script past it is a
//   timeout, an SFTP call past it ends the operation as it is (the connection stands).
// - Before a connection or a command fails over to anything, `ls` says where the VM stands
//   (once per failure streak): a removed VM is VMNotFoundError; a paused one is resumed once per
//   operation and the operation goes again. exe.dev's front refuses authentication (or closes
//   the connection during it) for a VM that is not running: that too goes to the resume.
// - An SSH endpoint that refuses the connection or whose name does not resolve is tried again,
//   with a growing delay, until the readiness timeout has passed since the operation began (a
//   VM that is starting); one that drops while opening, up to reconnect_attempts; one that did
//   not answer within its timeouts is not tried again (each try costs the whole timeout).
//   Then `automatic` falls back to /exec (logged once) and `ssh` throws the failure.
// - A connection that dropped under an operation is reopened at once and the operation runs
//   again when nothing can have run or it is idempotent, up to reconnect_attempts. Otherwise
//   (a command that may have run) the outcome is unknown: CommandOutcomeUnknownError, never a
//   second run. The same holds for /exec, whose client has already re-sent what it could.
// - exe.dev's refusal of a command on /exec (422) means the VM is paused (resumed once) or gone.
// - A connection that refuses the SFTP subsystem carries file data through scripts from then
//   on; one that refused a session channel past its patience (the connection's own wait,
//   SshRecoveryOptions::channel_refusal_patience) ends the operation.

#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/ssh/options.hpp>

#include "sandbox/run_errors.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace exedev::detail {

/// Where the VM stands, as `ls` said after the failure.
enum class VmCondition {
  unknown,  ///< not looked at since the failure streak began
  gone,     ///< `ls` does not list it
  paused,   ///< paused: a resume brings it back
  present,  ///< any other state, or `ls` itself failed (then assumed present)
};

/// The operation's state when an attempt failed.
struct RouteAttempt {
  Transport transport = Transport::automatic;  ///< as configured: `ssh` never falls back
  RouteStep step = RouteStep::operating;       ///< where the failed attempt was
  bool over_ssh = false;                       ///< the failed attempt used SSH (else /exec)
  int attempts = 1;                            ///< attempts so far, the failed one included
  std::chrono::milliseconds elapsed{0};        ///< since the first attempt began
  bool may_have_run = false;                   ///< the failure says the operation may have taken effect
  bool idempotent = false;                     ///< running it twice leaves what once does
  bool resumed = false;                        ///< this operation has resumed the VM already
  VmCondition vm = VmCondition::unknown;
  std::chrono::milliseconds readiness_timeout{0};  ///< how long a starting VM may take to answer
};

/// Which error a failed operation ends with.
enum class RouteError {
  as_is,            ///< the failure itself
  outcome_unknown,  ///< CommandOutcomeUnknownError (the failure nested, what arrived held)
  vm_not_found,     ///< VMNotFoundError
  timeout,          ///< WorkspaceTimeoutError
  output_limit,     ///< WorkspaceOutputLimitError
};

/// What the coroutine does next.
struct RouteAction {
  enum class Kind {
    reconnect,      ///< drop the connection, wait `delay`, connect again, the operation again
    inspect_vm,     ///< `ls` the VM, then ask again with RouteAttempt::vm set
    resume,         ///< resume the VM and wait until it is ready, then connect again and go again
    fall_back,      ///< /exec from now on (log why, once), then the operation again over it
    without_sftp,   ///< this connection serves no SFTP: file data travels through scripts
    fail,           ///< throw `error`
  };
  Kind kind = Kind::fail;
  std::chrono::milliseconds delay{0};
  RouteError error = RouteError::as_is;
  auto operator<=>(const RouteAction&) const = default;
};

[[nodiscard]] RouteAction next_action(RouteFailure failure, const RouteAttempt& attempt, const SshRecoveryOptions& limits);

/// SSH endpoints ("host:port") whose connect timed out, and when: backends that share this
/// memory skip an endpoint that did not answer lately instead of each waiting out its own
/// timeout (SshRecoveryOptions::unanswered_memory). Sans-IO: the caller passes the time; not
/// synchronised (SshEndpointMemory wraps it with a lock).
class UnansweredEndpoints {
 public:
  using Clock = std::chrono::steady_clock;
  void note(const std::string& endpoint, Clock::time_point now);
  /// When `endpoint` last timed out, if that is less than `memory` before `now`. Forgets what
  /// is older, so the memory never grows past the endpoints that timed out within `memory`.
  [[nodiscard]] std::optional<Clock::time_point> timed_out_since(const std::string& endpoint, Clock::time_point now,
                                                                 Clock::duration memory);

 private:
  std::map<std::string, Clock::time_point> timed_out_;
};

}  // namespace exedev::detail
