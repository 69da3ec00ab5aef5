#include "client/run_recovery.hpp"

#include "common/backoff.hpp"

#include <algorithm>

namespace exedev::detail {

RunRecovery::RunRecovery(int poll_seconds) : poll_seconds_(std::max(poll_seconds, 1)) {}

std::chrono::milliseconds RunRecovery::poll_retry_delay(int failures) {
  return doubled_delay(std::chrono::milliseconds(250), std::max(failures, 1), std::chrono::milliseconds(4000));
}

RunStep RunRecovery::on_answer(const RunAnswer& answer, bool started, std::chrono::seconds lasted) {
  using K = RunAnswer::Kind;
  const bool launching = mode_ == ScriptMode::launch;
  RunStep step;
  const auto fail = [&](RunFailure failure) {
    step.kind = RunStep::Kind::fail;
    step.failure = failure;
    return step;
  };
  switch (answer.kind) {
    case K::exited:
      step.forget_record = true;
      if (answer.flag == 't') return fail(RunFailure::timed_out_on_vm);
      step.kind = RunStep::Kind::finish;
      step.exit_code = answer.exit_code;
      return step;
    case K::limit:
      step.kind = RunStep::Kind::stop;
      step.reason = StopReason::output_limit;
      return step;
    case K::running:
      mode_ = ScriptMode::follow;
      failures_ = 0;
      step.mode = mode_;
      return step;
    case K::lost:
      if (mode_ == ScriptMode::probe && !started) {
        step.forget_record = true;  // the probe left a tombstone
        return fail(RunFailure::not_started);
      }
      return fail(RunFailure::record_lost);
    case K::not_created:
      // (Contradicted by a frame that showed the command started: then nothing is known.)
      return fail(started ? RunFailure::record_lost : RunFailure::record_not_created);
    case K::http_error: {
      // A refused launch started nothing, unless a frame said otherwise.
      const bool refused_launch = launching && !started;
      if (refused_launch && answer.status < 500) return fail(RunFailure::refused);
      if (answer.status == 422) return fail(RunFailure::poll_refused);
      if (answer.status != 429 && answer.status < 500) return fail(RunFailure::poll_status);
      break;
    }
    case K::cut:
      if (launching && !started && !answer.sent) return fail(RunFailure::not_sent);
      // A request cut after a while is most likely exe.dev's own request limit: wait less per
      // request from now on.
      if (answer.sent && lasted.count() >= 2) {
        poll_seconds_ = static_cast<int>(std::clamp<long long>(lasted.count() - 1, 1, poll_seconds_));
      }
      break;
  }
  return retry_from_record(started);
}

RunStep RunRecovery::retry_from_record(bool started) {
  if (mode_ == ScriptMode::launch || started) mode_ = started ? ScriptMode::follow : ScriptMode::probe;
  RunStep step;
  if (++failures_ > max_poll_failures) {
    step.kind = RunStep::Kind::fail;
    step.failure = RunFailure::unreachable;
    return step;
  }
  step.mode = mode_;
  step.delay = poll_retry_delay(failures_);
  return step;
}

RunStep RunRecovery::on_deadline() const { return on_error(StopReason::deadline); }

RunStep RunRecovery::on_error(StopReason reason) const {
  RunStep step;
  step.kind = RunStep::Kind::stop;
  step.reason = reason;
  return step;
}

RunConclusion conclude(StopReason reason, StopResult stop) {
  const bool unconfirmed = stop == StopResult::unconfirmed;
  switch (reason) {
    case StopReason::deadline: return unconfirmed ? RunConclusion::timeout_unknown : RunConclusion::timeout;
    case StopReason::output_limit: return RunConclusion::output_limit;
    case StopReason::unreadable: return unconfirmed ? RunConclusion::unreadable_unknown : RunConclusion::unreadable;
    case StopReason::interrupted: break;
  }
  return RunConclusion::rethrow;
}

const char* stop_fate(StopResult stop) {
  switch (stop) {
    case StopResult::stopped: return "the command was stopped";
    case StopResult::never_started: return "the command was never started";
    case StopResult::unconfirmed: break;
  }
  return "the VM did not confirm that the command stopped; it may still be running";
}

}  // namespace exedev::detail
