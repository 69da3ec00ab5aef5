// The route's recovery policy, row by row (src/sandbox/route_recovery.hpp): every failure class
// in every state that changes its answer, and the memory of endpoints that did not answer.
#include "sandbox/route_recovery.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace exedev::detail;
using namespace std::chrono_literals;
using exedev::Transport;
using Kind = RouteAction::Kind;
using F = RouteFailure;

namespace {

const exedev::SshRecoveryOptions limits{};  // the documented defaults

RouteAction act(Kind kind, std::chrono::milliseconds delay = 0ms) {
  RouteAction action;
  action.kind = kind;
  action.delay = delay;
  return action;
}

RouteAction fails(RouteError error) {
  RouteAction action;
  action.error = error;
  return action;
}

// An attempt over SSH, the first, nothing known about the VM.
RouteAttempt ssh_attempt(RouteStep step, Transport transport = Transport::automatic) {
  RouteAttempt attempt;
  attempt.transport = transport;
  attempt.step = step;
  attempt.over_ssh = true;
  attempt.readiness_timeout = 300s;
  return attempt;
}

RouteAttempt exec_attempt() {
  RouteAttempt attempt;
  attempt.transport = Transport::exec;
  attempt.step = RouteStep::operating;
  attempt.readiness_timeout = 300s;
  return attempt;
}

RouteAttempt with_vm(RouteAttempt attempt, VmCondition vm, bool resumed = false) {
  attempt.vm = vm;
  attempt.resumed = resumed;
  return attempt;
}

struct Row {
  std::string name;
  F failure;
  RouteAttempt attempt;
  RouteAction expected;
};

void walk(const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    INFO(row.name);
    const auto action = next_action(row.failure, row.attempt, limits);
    CHECK(static_cast<int>(action.kind) == static_cast<int>(row.expected.kind));
    CHECK(action.delay == row.expected.delay);
    CHECK(static_cast<int>(action.error) == static_cast<int>(row.expected.error));
  }
}

}  // namespace

TEST_CASE("route recovery: failures that say nothing about the route end the operation") {
  std::vector<Row> rows;
  for (const auto& attempt : {ssh_attempt(RouteStep::operating), ssh_attempt(RouteStep::connecting), exec_attempt()}) {
    rows.push_back({"cancelled", F::cancelled, attempt, fails(RouteError::as_is)});
    rows.push_back({"other", F::other, attempt, fails(RouteError::as_is)});
    rows.push_back({"access denied", F::access_denied, attempt, fails(RouteError::as_is)});
    rows.push_back({"vm not found", F::vm_not_found, attempt, fails(RouteError::as_is)});
    rows.push_back({"timed out", F::timed_out, attempt, fails(RouteError::timeout)});
    rows.push_back({"output limit", F::output_limit, attempt, fails(RouteError::output_limit)});
  }
  // A file operation's deadline (an SFTP call the VM stalls): never tried again, not even an
  // idempotent transfer with attempts to spare.
  auto idempotent_transfer = ssh_attempt(RouteStep::operating);
  idempotent_transfer.idempotent = true;
  rows.push_back({"deadline passed", F::deadline_passed, ssh_attempt(RouteStep::operating), fails(RouteError::as_is)});
  rows.push_back({"deadline passed, idempotent", F::deadline_passed, idempotent_transfer, fails(RouteError::as_is)});
  rows.push_back({"deadline passed, ssh", F::deadline_passed, ssh_attempt(RouteStep::operating, Transport::ssh),
                  fails(RouteError::as_is)});
  // A refused host key is never a reason to fall back, whatever the transport.
  rows.push_back({"host key, auto", F::host_key_rejected, ssh_attempt(RouteStep::connecting), fails(RouteError::as_is)});
  rows.push_back({"host key, ssh", F::host_key_rejected, ssh_attempt(RouteStep::connecting, Transport::ssh),
                  fails(RouteError::as_is)});
  walk(rows);
}

TEST_CASE("route recovery: keys") {
  walk({
      {"unusable key, auto: /exec", F::key_unusable, ssh_attempt(RouteStep::connecting), act(Kind::fall_back)},
      {"unusable key, ssh: thrown", F::key_unusable, ssh_attempt(RouteStep::connecting, Transport::ssh), fails(RouteError::as_is)},
      {"misrouted, auto: /exec", F::misrouted, ssh_attempt(RouteStep::connecting), act(Kind::fall_back)},
      {"misrouted, ssh: thrown", F::misrouted, ssh_attempt(RouteStep::connecting, Transport::ssh), fails(RouteError::as_is)},
      // A denial after the handshake: first where the VM stands (exe.dev's front denies a VM
      // that is not running).
      {"denied, VM unknown", F::auth_denied, ssh_attempt(RouteStep::connecting), act(Kind::inspect_vm)},
      {"denied, VM gone", F::auth_denied, with_vm(ssh_attempt(RouteStep::connecting), VmCondition::gone),
       fails(RouteError::vm_not_found)},
      {"denied, VM paused", F::auth_denied, with_vm(ssh_attempt(RouteStep::connecting), VmCondition::paused), act(Kind::resume)},
      {"denied, VM paused, resumed already, auto", F::auth_denied,
       with_vm(ssh_attempt(RouteStep::connecting), VmCondition::paused, true), act(Kind::fall_back)},
      {"denied, VM running, auto", F::auth_denied, with_vm(ssh_attempt(RouteStep::connecting), VmCondition::present),
       act(Kind::fall_back)},
      {"denied, VM running, ssh", F::auth_denied,
       with_vm(ssh_attempt(RouteStep::connecting, Transport::ssh), VmCondition::present), fails(RouteError::as_is)},
  });
}

TEST_CASE("route recovery: an endpoint that does not answer yet is tried within the readiness timeout") {
  for (const auto failure : {F::connect_refused, F::name_not_resolved}) {
    auto first = ssh_attempt(RouteStep::connecting);
    auto running = with_vm(first, VmCondition::present);
    auto third = running;
    third.attempts = 3;
    third.elapsed = 10s;
    auto past_deadline = running;
    past_deadline.attempts = 40;
    past_deadline.elapsed = 299s;  // + the next delay passes the 300 s readiness timeout
    auto past_deadline_ssh = past_deadline;
    past_deadline_ssh.transport = Transport::ssh;
    walk({
        {"VM unknown", failure, first, act(Kind::inspect_vm)},
        {"VM gone", failure, with_vm(first, VmCondition::gone), fails(RouteError::vm_not_found)},
        {"VM paused", failure, with_vm(first, VmCondition::paused), act(Kind::resume)},
        {"first retry", failure, running, act(Kind::reconnect, limits.reconnect_delay)},
        {"third retry: doubled twice", failure, third, act(Kind::reconnect, 4 * limits.reconnect_delay)},
        {"past the readiness timeout, auto", failure, past_deadline, act(Kind::fall_back)},
        {"past the readiness timeout, ssh", failure, past_deadline_ssh, fails(RouteError::as_is)},
    });
  }
  auto capped = with_vm(ssh_attempt(RouteStep::connecting), VmCondition::present);
  capped.attempts = 20;
  walk({{"the delay stops at its cap", F::connect_refused, capped, act(Kind::reconnect, limits.reconnect_delay_cap)}});
}

TEST_CASE("route recovery: an endpoint that timed out is not tried again") {
  walk({
      {"timed out, auto", F::connect_timed_out, ssh_attempt(RouteStep::connecting), act(Kind::fall_back)},
      {"timed out, ssh", F::connect_timed_out, ssh_attempt(RouteStep::connecting, Transport::ssh), fails(RouteError::as_is)},
  });
}

TEST_CASE("route recovery: a connection that drops while it opens") {
  auto first = ssh_attempt(RouteStep::connecting);
  auto running = with_vm(first, VmCondition::present);
  auto last = running;
  last.attempts = limits.reconnect_attempts;
  auto last_ssh = last;
  last_ssh.transport = Transport::ssh;
  walk({
      {"VM unknown", F::dropped, first, act(Kind::inspect_vm)},
      {"VM gone", F::dropped, with_vm(first, VmCondition::gone), fails(RouteError::vm_not_found)},
      {"VM paused: resumed once", F::dropped, with_vm(first, VmCondition::paused), act(Kind::resume)},
      {"VM paused, resumed already: tried again", F::dropped, with_vm(first, VmCondition::paused, true),
       act(Kind::reconnect, limits.reconnect_delay)},
      {"VM running", F::dropped, running, act(Kind::reconnect, limits.reconnect_delay)},
      {"attempts spent, auto", F::dropped, last, act(Kind::fall_back)},
      {"attempts spent, ssh", F::dropped, last_ssh, fails(RouteError::as_is)},
  });
}

TEST_CASE("route recovery: a connection that drops under an operation") {
  auto not_run = ssh_attempt(RouteStep::operating);
  auto may_have_run = not_run;
  may_have_run.may_have_run = true;
  auto idempotent = may_have_run;
  idempotent.idempotent = true;
  auto spent = not_run;
  spent.attempts = limits.reconnect_attempts;
  auto idempotent_spent = idempotent;
  idempotent_spent.attempts = limits.reconnect_attempts;
  walk({
      // Nothing ran, or running it again is harmless: at once on a fresh connection.
      {"not run", F::dropped, not_run, act(Kind::reconnect)},
      {"idempotent, may have run", F::dropped, idempotent, act(Kind::reconnect)},
      {"SFTP opening dropped", F::dropped, ssh_attempt(RouteStep::opening_sftp), act(Kind::reconnect)},
      {"not run, attempts spent", F::dropped, spent, fails(RouteError::as_is)},
      // A command that may have run never runs twice: is the VM still there?
      {"may have run", F::dropped, may_have_run, act(Kind::inspect_vm)},
      {"may have run, VM gone", F::dropped, with_vm(may_have_run, VmCondition::gone), fails(RouteError::vm_not_found)},
      {"may have run, VM paused: no resume", F::dropped, with_vm(may_have_run, VmCondition::paused),
       fails(RouteError::outcome_unknown)},
      {"may have run, VM there", F::dropped, with_vm(may_have_run, VmCondition::present), fails(RouteError::outcome_unknown)},
      {"idempotent, attempts spent", F::dropped, with_vm(idempotent_spent, VmCondition::present),
       fails(RouteError::outcome_unknown)},
      // A command over SSH whose connection dropped reports it so (ssh_run): the same rows.
      {"outcome unknown over SSH", F::outcome_unknown, may_have_run, act(Kind::inspect_vm)},
      {"outcome unknown over SSH, idempotent", F::outcome_unknown, idempotent, act(Kind::reconnect)},
  });
}

TEST_CASE("route recovery: /exec, whose client has re-sent what it could") {
  auto not_sent = exec_attempt();
  auto may_have_run = exec_attempt();
  may_have_run.may_have_run = true;
  auto idempotent = may_have_run;
  idempotent.idempotent = true;
  walk({
      {"not sent: passed on", F::dropped, not_sent, fails(RouteError::as_is)},
      {"may have run", F::outcome_unknown, may_have_run, act(Kind::inspect_vm)},
      {"idempotent, may have run: the client's retries are spent", F::outcome_unknown, idempotent, act(Kind::inspect_vm)},
      {"may have run, VM gone", F::outcome_unknown, with_vm(may_have_run, VmCondition::gone), fails(RouteError::vm_not_found)},
      {"may have run, VM there", F::outcome_unknown, with_vm(may_have_run, VmCondition::present),
       fails(RouteError::outcome_unknown)},
      // exe.dev's 422: a paused VM is resumed once, a gone one is not found.
      {"refused", F::command_refused, not_sent, act(Kind::inspect_vm)},
      {"refused, VM gone", F::command_refused, with_vm(not_sent, VmCondition::gone), fails(RouteError::vm_not_found)},
      {"refused, VM paused", F::command_refused, with_vm(not_sent, VmCondition::paused), act(Kind::resume)},
      {"refused, VM paused, resumed already", F::command_refused, with_vm(not_sent, VmCondition::paused, true),
       fails(RouteError::as_is)},
      {"refused, VM running", F::command_refused, with_vm(not_sent, VmCondition::present), fails(RouteError::as_is)},
  });
}

TEST_CASE("route recovery: a standing connection's refusals") {
  walk({
      {"SFTP refused: scripts carry the data", F::sftp_refused, ssh_attempt(RouteStep::opening_sftp), act(Kind::without_sftp)},
      // The connection waited SshRecoveryOptions::channel_refusal_patience already.
      {"channel refused past its patience", F::channel_refused, ssh_attempt(RouteStep::operating), fails(RouteError::as_is)},
  });
}

TEST_CASE("route recovery: every failure class has an answer in every step") {
  const std::vector<F> all = {F::connect_refused, F::connect_timed_out, F::name_not_resolved, F::dropped,
                              F::auth_denied,     F::key_unusable,      F::misrouted,      F::host_key_rejected, F::channel_refused,
                              F::sftp_refused,    F::command_refused,   F::outcome_unknown,   F::timed_out,
                              F::output_limit,    F::vm_not_found,      F::access_denied,     F::cancelled,
                              F::deadline_passed, F::other};
  // Walking the answers the way the backend does (an inspection answers the VM's condition)
  // always ends in one of the other actions, within one inspection.
  for (const auto step : {RouteStep::connecting, RouteStep::opening_sftp, RouteStep::operating}) {
    for (const auto failure : all) {
      for (const auto vm : {VmCondition::gone, VmCondition::paused, VmCondition::present}) {
        auto attempt = ssh_attempt(step);
        auto action = next_action(failure, attempt, limits);
        if (action.kind == Kind::inspect_vm) {
          attempt.vm = vm;
          action = next_action(failure, attempt, limits);
        }
        CHECK(action.kind != Kind::inspect_vm);
        // Nothing is resumed twice by one operation.
        attempt.resumed = true;
        CHECK(next_action(failure, attempt, limits).kind != Kind::resume);
      }
    }
  }
}

TEST_CASE("route recovery: the limits are the options") {
  exedev::SshRecoveryOptions tight;
  tight.reconnect_attempts = 1;
  tight.reconnect_delay = 7ms;
  auto running = with_vm(ssh_attempt(RouteStep::connecting), VmCondition::present);
  CHECK(next_action(F::dropped, running, tight).kind == Kind::fall_back);
  CHECK(next_action(F::connect_refused, running, tight) == act(Kind::reconnect, 7ms));
  auto dropped = ssh_attempt(RouteStep::operating);
  CHECK(next_action(F::dropped, dropped, tight) == fails(RouteError::as_is));
}

TEST_CASE("unanswered endpoints: remembered for a bounded time, then forgotten") {
  using Clock = UnansweredEndpoints::Clock;
  UnansweredEndpoints memory;
  const auto t0 = Clock::time_point{} + 1000s;
  CHECK_FALSE(memory.timed_out_since("vm.exe.xyz:22", t0, 60s));
  memory.note("vm.exe.xyz:22", t0);
  CHECK(memory.timed_out_since("vm.exe.xyz:22", t0 + 59s, 60s) == t0);
  CHECK_FALSE(memory.timed_out_since("other.exe.xyz:22", t0 + 1s, 60s));  // keyed by host and port
  CHECK_FALSE(memory.timed_out_since("vm.exe.xyz:2222", t0 + 1s, 60s));
  CHECK_FALSE(memory.timed_out_since("vm.exe.xyz:22", t0 + 60s, 60s));
  // Forgotten for good: a later look within the window does not bring it back.
  CHECK_FALSE(memory.timed_out_since("vm.exe.xyz:22", t0 + 1s, 60s));
  // A memory of 0 remembers nothing.
  memory.note("vm.exe.xyz:22", t0);
  CHECK_FALSE(memory.timed_out_since("vm.exe.xyz:22", t0, 0s));
  // A second timeout moves the window.
  memory.note("vm.exe.xyz:22", t0);
  memory.note("vm.exe.xyz:22", t0 + 30s);
  CHECK(memory.timed_out_since("vm.exe.xyz:22", t0 + 80s, 60s) == t0 + 30s);
}
