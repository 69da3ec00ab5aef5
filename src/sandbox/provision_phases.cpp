#include "sandbox/provision_phases.hpp"

#include <stdexcept>

namespace exedev::detail {

ProvisionPhases::ProvisionPhases(ProvisionPlan plan) : plan_(plan) {}

ProvisionAction ProvisionPhases::begin() {
  ProvisionAction action;
  switch (phase_) {
    case ProvisionPhase::ready:
      action.kind = ProvisionAction::Kind::finish;
      return action;
    case ProvisionPhase::outcome_unknown:
      action.kind = ProvisionAction::Kind::fail;
      action.failure = ProvisionFailure::repeat_outcome_unknown;
      return action;
    case ProvisionPhase::busy:
      action.kind = ProvisionAction::Kind::wait;
      return action;
    case ProvisionPhase::needs_init:
      phase_ = ProvisionPhase::busy;
      vm_exists_ = true;
      return send(ProvisionStep::wait_ready);
    case ProvisionPhase::pending:
      break;
  }
  phase_ = ProvisionPhase::busy;
  if (plan_.kind != ProvisionPlan::Kind::provision) return send(ProvisionStep::find_vm);
  return send(plan_.copy ? ProvisionStep::find_base : ProvisionStep::create);
}

ProvisionAction ProvisionPhases::on_result(const StepResult& result) {
  if (phase_ != ProvisionPhase::busy) throw std::logic_error("ProvisionPhases::on_result without a step in flight");
  using S = ProvisionStep;
  // Whatever the delete did, the cancellation is what the caller asked about; a VM it left
  // behind is one the next operation finds and gets ready.
  if (step_ == S::delete_vm) {
    return end_with(result.done ? ProvisionPhase::pending : ProvisionPhase::needs_init, ProvisionFailure::cancelled);
  }
  if (!result.done) return on_failure(result);
  switch (step_) {
    case S::find_base: return send(result.base_running ? S::flush_base : S::create);
    case S::flush_base: return send(S::create);
    case S::create:
      vm_exists_ = true;
      created_ = true;
      return send(S::wait_ready);
    case S::find_vm:
      if (plan_.kind == ProvisionPlan::Kind::attach || initialized_) break;
      vm_exists_ = true;
      return send(S::wait_ready);
    case S::wait_ready:
      if (plan_.copy || plan_.kind == ProvisionPlan::Kind::initialize) return send(S::tag_and_comment);
      if (plan_.working_dir) return send(S::make_working_dir);
      return after_initialization();
    case S::tag_and_comment:
      if (plan_.working_dir) return send(S::make_working_dir);
      return after_initialization();
    case S::make_working_dir: return after_initialization();
    case S::read_state:
    case S::delete_vm: break;
  }
  return finish();
}

ProvisionAction ProvisionPhases::on_failure(const StepResult& result) {
  using S = ProvisionStep;
  // Checked first: a create that may have made a VM must never be followed by another.
  if (step_ == S::create && result.outcome_unknown) {
    return end_with(ProvisionPhase::outcome_unknown, ProvisionFailure::outcome_unknown);
  }
  if (result.cancelled && created_ && plan_.delete_on_cancel) return send(S::delete_vm);
  const ProvisionPhase resting = vm_exists_ ? ProvisionPhase::needs_init : ProvisionPhase::pending;
  if (result.cancelled) return end_with(resting, ProvisionFailure::rethrow);
  switch (step_) {
    case S::wait_ready:
    case S::tag_and_comment:
    case S::make_working_dir:
    case S::read_state: return end_with(resting, ProvisionFailure::initialization);
    case S::find_base:
    case S::flush_base:
    case S::create:
    case S::find_vm:
    case S::delete_vm: break;
  }
  return end_with(resting, ProvisionFailure::rethrow);
}

ProvisionAction ProvisionPhases::after_initialization() {
  initialized_ = true;
  if (created_) return send(ProvisionStep::read_state);
  if (plan_.kind == ProvisionPlan::Kind::initialize) return send(ProvisionStep::find_vm);
  return finish();
}

ProvisionAction ProvisionPhases::send(ProvisionStep step) {
  step_ = step;
  ProvisionAction action;
  action.kind = ProvisionAction::Kind::send;
  action.step = step;
  action.shielded = step == ProvisionStep::create || step == ProvisionStep::delete_vm;
  action.despite_cancellation = step == ProvisionStep::delete_vm;
  return action;
}

ProvisionAction ProvisionPhases::finish() {
  ProvisionAction action;
  action.kind = ProvisionAction::Kind::finish;
  action.step = step_;
  rest(ProvisionPhase::ready);
  return action;
}

ProvisionAction ProvisionPhases::end_with(ProvisionPhase phase, ProvisionFailure failure) {
  ProvisionAction action;
  action.kind = ProvisionAction::Kind::fail;
  action.step = step_;
  action.failure = failure;
  rest(phase);
  return action;
}

void ProvisionPhases::rest(ProvisionPhase phase) {
  // Between operations only the phase counts: the rest is reset, so equal phases compare equal.
  phase_ = phase;
  step_ = ProvisionStep::create;
  vm_exists_ = false;
  created_ = false;
  initialized_ = false;
}

}  // namespace exedev::detail
