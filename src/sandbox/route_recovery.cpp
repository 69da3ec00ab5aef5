#include "sandbox/route_recovery.hpp"

#include "common/backoff.hpp"

#include <algorithm>

namespace exedev::detail {

namespace {

using Kind = RouteAction::Kind;

RouteAction act(Kind kind, std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
  RouteAction action;
  action.kind = kind;
  action.delay = delay;
  return action;
}

RouteAction fail(RouteError error) {
  RouteAction action;
  action.error = error;
  return action;
}

// SSH cannot be used: `automatic` goes on over /exec, `ssh` ends with the failure.
RouteAction give_up_on_ssh(const RouteAttempt& attempt) {
  return attempt.transport == Transport::automatic ? act(Kind::fall_back) : fail(RouteError::as_is);
}

// The delay before connecting again after `attempts` failed openings.
std::chrono::milliseconds reconnect_delay(const RouteAttempt& attempt, const SshRecoveryOptions& limits) {
  return doubled_delay(limits.reconnect_delay, std::max(attempt.attempts - 1, 0), limits.reconnect_delay_cap);
}

// What `ls` says decides first: a removed VM, or a paused one not yet resumed by this operation.
// nullopt: the VM is there (or running again): the failure's own row decides.
std::optional<RouteAction> by_vm(const RouteAttempt& attempt) {
  switch (attempt.vm) {
    case VmCondition::unknown: return act(Kind::inspect_vm);
    case VmCondition::gone: return fail(RouteError::vm_not_found);
    case VmCondition::paused:
      if (!attempt.resumed) return act(Kind::resume);
      return std::nullopt;
    case VmCondition::present: return std::nullopt;
  }
  return std::nullopt;
}

// A connection that could not be opened.
RouteAction opening_failed(RouteFailure failure, const RouteAttempt& attempt, const SshRecoveryOptions& limits) {
  // Each try of an endpoint that does not answer costs the whole timeout: never tried again.
  if (failure == RouteFailure::connect_timed_out) return give_up_on_ssh(attempt);
  if (auto decided = by_vm(attempt)) return *decided;
  const auto delay = reconnect_delay(attempt, limits);
  switch (failure) {
    case RouteFailure::connect_refused:
    case RouteFailure::name_not_resolved:
      // A VM that is starting: its name resolves and its sshd listens within the readiness timeout.
      if (attempt.elapsed + delay < attempt.readiness_timeout) return act(Kind::reconnect, delay);
      return give_up_on_ssh(attempt);
    case RouteFailure::dropped:
      if (attempt.attempts < limits.reconnect_attempts) return act(Kind::reconnect, delay);
      return give_up_on_ssh(attempt);
    default: return give_up_on_ssh(attempt);  // auth_denied on a running VM
  }
}

// A failure under the operation, or one that may have run.
RouteAction operation_failed(const RouteAttempt& attempt, const SshRecoveryOptions& limits) {
  const bool runs_again_safely = !attempt.may_have_run || attempt.idempotent;
  // Over SSH the connection is ours to reopen; over /exec the client already re-sent what it could.
  if (attempt.over_ssh && runs_again_safely && attempt.attempts < limits.reconnect_attempts) return act(Kind::reconnect);
  if (!attempt.may_have_run) return fail(RouteError::as_is);
  if (auto decided = by_vm(attempt); decided && decided->kind != Kind::resume) return *decided;
  return fail(RouteError::outcome_unknown);
}

}  // namespace

RouteAction next_action(RouteFailure failure, const RouteAttempt& attempt, const SshRecoveryOptions& limits) {
  switch (failure) {
    case RouteFailure::timed_out: return fail(RouteError::timeout);
    // Another attempt would wait out the same deadline against the same VM.
    case RouteFailure::deadline_passed: return fail(RouteError::as_is);
    case RouteFailure::output_limit: return fail(RouteError::output_limit);
    case RouteFailure::cancelled:
    case RouteFailure::host_key_rejected:
    case RouteFailure::access_denied:
    case RouteFailure::vm_not_found:
    case RouteFailure::channel_refused:
    case RouteFailure::other: return fail(RouteError::as_is);
    case RouteFailure::key_unusable:
    case RouteFailure::misrouted: return give_up_on_ssh(attempt);
    case RouteFailure::sftp_refused: return act(Kind::without_sftp);
    case RouteFailure::command_refused: {
      if (auto decided = by_vm(attempt)) return *decided;
      return fail(RouteError::as_is);
    }
    case RouteFailure::outcome_unknown: return operation_failed(attempt, limits);
    case RouteFailure::auth_denied:
    case RouteFailure::connect_refused:
    case RouteFailure::connect_timed_out:
    case RouteFailure::name_not_resolved: return opening_failed(failure, attempt, limits);
    case RouteFailure::dropped:
      if (attempt.step == RouteStep::connecting) return opening_failed(failure, attempt, limits);
      return operation_failed(attempt, limits);
  }
  return fail(RouteError::as_is);
}

void UnansweredEndpoints::note(const std::string& endpoint, Clock::time_point now) { timed_out_[endpoint] = now; }

std::optional<UnansweredEndpoints::Clock::time_point> UnansweredEndpoints::timed_out_since(const std::string& endpoint,
                                                                                         Clock::time_point now,
                                                                                         Clock::duration memory) {
  std::erase_if(timed_out_, [&](const auto& entry) { return now - entry.second >= memory; });
  const auto it = timed_out_.find(endpoint);
  if (it == timed_out_.end()) return std::nullopt;
  return it->second;
}

}  // namespace exedev::detail
