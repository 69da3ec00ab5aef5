#pragma once
// What a failed operation on a VM means, sans-IO: the one classification of errors that
// SandboxBackend's recovery (route_recovery.hpp) acts on, read from each error's code and cause,
// never from its text (tested without sockets in tests/unit/sandbox/run_errors_test.cpp).

#include <exedev/partial_output.hpp>

#include <cstddef>
#include <exception>
#include <string>

namespace exedev::detail {

/// Where on the route the failure happened: the same code means different things there (a
/// timeout while connecting is an endpoint that did not answer; under an operation, a dropped
/// connection).
enum class RouteStep {
  connecting,    ///< opening the SSH connection (resolve, connect, handshake, host key, keys)
  opening_sftp,  ///< opening the SFTP session on a connection that stands
  operating,     ///< the operation itself, over SSH or /exec
};

/// What failed.
enum class RouteFailure {
  connect_refused,    ///< the TCP connect was refused: nothing listens (yet: the VM is starting)
  connect_timed_out,  ///< resolving, connecting, the handshake or authentication passed its timeout
  name_not_resolved,  ///< the SSH host's name does not resolve (yet: a new VM's name takes seconds)
  dropped,            ///< the connection failed or dropped (while opening it, or under the operation)
  auth_denied,        ///< no key accepted after the handshake, or the server closed the connection
                      ///< during authentication (exe.dev's front, for a VM that is not running)
  key_unusable,       ///< the explicit key cannot be used (unreadable, encrypted, unknown format)
  misrouted,          ///< the connection landed somewhere other than the VM (exe.dev's front let the key choose)
  host_key_rejected,  ///< the host key was refused (changed, unknown under strict, revoked)
  channel_refused,    ///< a standing connection refused a session channel (MaxSessions), past its patience
  sftp_refused,       ///< a standing connection refused the SFTP subsystem
  command_refused,    ///< exe.dev refused the command on /exec (422): the VM may be paused or gone
  outcome_unknown,    ///< the operation may have run and its result is lost
  deadline_passed,    ///< an SFTP call was not answered by the operation's deadline
                      ///< (SshOptions::file_operation_timeout): the VM stalls it, the connection stands
  timed_out,          ///< the command passed its timeout and was stopped
  output_limit,       ///< the command wrote more than its limit and was stopped
  vm_not_found,       ///< the VM does not exist
  access_denied,      ///< the token may not (401, 403, no token, a tag-scope refusal)
  cancelled,          ///< operation_aborted
  other,              ///< anything else (invalid input, an output callback's exception, a
                      ///< request refused before it ran): passed on as it is
};

struct FailureClass {
  RouteFailure kind = RouteFailure::other;
  bool may_have_run = false;  ///< the error's may_have_run(): the operation may have taken effect
  std::size_t limit = 0;      ///< output_limit: the limit passed
  PartialOutput output;       ///< what arrived, raw (timeout, output limit, outcome unknown)
  std::string message;        ///< the error's what(), for the log line of a fall-back
};

[[nodiscard]] FailureClass classify_failure(const std::exception_ptr& error, RouteStep step);

}  // namespace exedev::detail
