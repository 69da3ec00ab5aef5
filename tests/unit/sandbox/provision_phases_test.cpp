// The provisioning phases of VMs and SandboxBackend, checked without sockets: a walk over every
// reachable state of every plan with every event, then the sequences the rules are written for.
#include "sandbox/provision_phases.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace exedev::detail;
using S = ProvisionStep;
using A = ProvisionAction::Kind;
using P = ProvisionPhase;

namespace {

struct Event {
  std::string name;
  bool begin = false;  ///< an operation needs the VM; otherwise the step in flight ended with `result`
  StepResult result;
};

std::vector<Event> every_event() {
  std::vector<Event> events;
  Event begin;
  begin.name = "an operation begins";
  begin.begin = true;
  events.push_back(begin);
  for (const bool running : {false, true}) {
    Event done;
    done.name = running ? "done (the base runs)" : "done";
    done.result.done = true;
    done.result.base_running = running;
    events.push_back(done);
  }
  for (const bool cancelled : {false, true}) {
    for (const bool unknown : {false, true}) {
      Event failed;
      failed.name = std::string(cancelled ? "cancelled" : "failed") + (unknown ? " (may have reached exe.dev)" : "");
      failed.result.cancelled = cancelled;
      failed.result.outcome_unknown = unknown;
      events.push_back(failed);
    }
  }
  return events;
}

std::vector<ProvisionPlan> every_plan() {
  std::vector<ProvisionPlan> plans;
  for (const auto kind : {ProvisionPlan::Kind::provision, ProvisionPlan::Kind::attach, ProvisionPlan::Kind::initialize}) {
    for (const bool copy : {false, true}) {
      for (const bool working_dir : {false, true}) {
        for (const bool delete_on_cancel : {false, true}) {
          ProvisionPlan plan;
          plan.kind = kind;
          plan.copy = copy;
          plan.working_dir = working_dir;
          plan.delete_on_cancel = delete_on_cancel;
          plans.push_back(plan);
        }
      }
    }
  }
  return plans;
}

unsigned bit(S step) { return 1u << static_cast<unsigned>(step); }

// A state of the walk: the machine, and what the world knows that the machine must respect.
struct Walk {
  ProvisionPhases machine;
  bool in_flight = false;  ///< a step was sent and has not ended
  S step = S::create;      ///< in flight: which
  /// A VM may exist: a create that was not definitely refused, an existing VM the plan names,
  /// and no delete that succeeded since.
  bool vm_may_exist = false;
  bool created = false;      ///< this operation's create returned the VM
  bool vm_known = false;     ///< this operation knows the VM exists (created, found, or left by an earlier one)
  bool cancelled = false;    ///< a step of this operation ended cancelled
  unsigned creates = 0;      ///< create requests sent by this operation
  unsigned done_steps = 0;   ///< steps of this operation that succeeded (bits)
  auto operator<=>(const Walk&) const = default;
};

bool needs_vm(S step) {
  return step == S::wait_ready || step == S::tag_and_comment || step == S::make_working_dir || step == S::read_state ||
         step == S::delete_vm;
}

std::string describe(const Walk& w) {
  const auto& plan = w.machine.plan();
  return "plan " + std::to_string(static_cast<int>(plan.kind)) + (plan.copy ? " copy" : "") +
         (plan.working_dir ? " working_dir" : "") + (plan.delete_on_cancel ? " delete_on_cancel" : "") + "; phase " +
         std::to_string(static_cast<int>(w.machine.phase())) +
         (w.in_flight ? "; in flight: step " + std::to_string(static_cast<int>(w.step)) : std::string());
}

// Applies `action` (just returned by the machine) to the world, checking every rule that holds
// for a single action.
void check_action(const Walk& from, Walk& to, const ProvisionAction& action) {
  const auto& plan = to.machine.plan();
  const bool provisions = plan.kind == ProvisionPlan::Kind::provision;
  switch (action.kind) {
    case A::send: {
      CHECK(to.machine.phase() == P::busy);
      const S step = action.step;
      // Only the delete runs despite a cancellation; the create and the delete are shielded.
      CHECK(action.despite_cancellation == (step == S::delete_vm));
      CHECK(action.shielded == (step == S::create || step == S::delete_vm));
      if (step == S::create) {
        // At most one create per operation, and never while a VM may exist: no second VM by
        // accident, not even after a create whose outcome is unknown.
        CHECK(provisions);
        CHECK(to.creates == 0);
        CHECK_FALSE(to.vm_may_exist);
        if (plan.copy) CHECK((to.done_steps & bit(S::find_base)));
        ++to.creates;
        to.vm_may_exist = true;
      }
      if (step == S::find_base || step == S::flush_base) {
        CHECK(provisions);
        CHECK(plan.copy);
        CHECK_FALSE(to.vm_known);
      }
      if (step == S::flush_base) CHECK((to.done_steps & bit(S::find_base)));
      if (step == S::find_vm) CHECK_FALSE(provisions);
      if (needs_vm(step)) CHECK(to.vm_known);
      if (step == S::tag_and_comment) CHECK((plan.copy || plan.kind == ProvisionPlan::Kind::initialize));
      if (step == S::make_working_dir) CHECK(plan.working_dir);
      if (step == S::tag_and_comment || step == S::make_working_dir) CHECK((to.done_steps & bit(S::wait_ready)));
      if (step == S::read_state) {
        CHECK(to.created);
        CHECK((to.done_steps & bit(S::wait_ready)));
      }
      if (step == S::delete_vm) {
        // Only a VM this operation made, only after a cancellation, only when the plan says so.
        CHECK(plan.delete_on_cancel);
        CHECK(to.created);
        CHECK(to.cancelled);
      }
      // Once cancelled, the only step sent is the delete.
      if (to.cancelled) CHECK(step == S::delete_vm);
      // Nothing is sent twice, except initialize's closing `ls` of the VM it got ready.
      if ((to.done_steps & bit(step)) != 0u) {
        CHECK(step == S::find_vm);
        CHECK(plan.kind == ProvisionPlan::Kind::initialize);
        CHECK((to.done_steps & bit(S::wait_ready)));
      }
      to.in_flight = true;
      to.step = step;
      return;
    }
    case A::wait:
      CHECK(from.machine.phase() == P::busy);
      CHECK(to.machine == from.machine);
      return;
    case A::finish: {
      CHECK(to.machine.phase() == P::ready);
      CHECK_FALSE(to.cancelled);
      if (from.machine.phase() != P::ready) {
        // Everything the plan asks for was done by this operation.
        if (plan.kind != ProvisionPlan::Kind::attach) CHECK((to.done_steps & bit(S::wait_ready)));
        if (plan.kind == ProvisionPlan::Kind::attach) CHECK((to.done_steps & bit(S::find_vm)));
        if (plan.working_dir && plan.kind != ProvisionPlan::Kind::attach) CHECK((to.done_steps & bit(S::make_working_dir)));
        if (to.created) CHECK((to.done_steps & bit(S::read_state)));
        if ((plan.copy && provisions) || plan.kind == ProvisionPlan::Kind::initialize) {
          CHECK((to.done_steps & bit(S::tag_and_comment)));
        }
      }
      break;
    }
    case A::fail:
      switch (action.failure) {
        case ProvisionFailure::outcome_unknown:
          CHECK(from.in_flight);
          CHECK(from.step == S::create);
          CHECK(to.machine.phase() == P::outcome_unknown);
          break;
        case ProvisionFailure::repeat_outcome_unknown:
          CHECK(from.machine.phase() == P::outcome_unknown);
          CHECK_FALSE(from.in_flight);
          break;
        case ProvisionFailure::initialization:
          // Only a step of getting an existing VM ready, never for a cancellation.
          CHECK(from.in_flight);
          CHECK(needs_vm(from.step));
          CHECK(action.step == from.step);
          CHECK_FALSE(to.cancelled);
          CHECK(to.machine.phase() == P::needs_init);
          break;
        case ProvisionFailure::cancelled:
          CHECK(from.in_flight);
          CHECK(from.step == S::delete_vm);
          break;
        case ProvisionFailure::rethrow:
          CHECK(from.in_flight);
          // A VM this operation made and its caller cancelled: deleted when the plan says so.
          if (to.cancelled && to.created) CHECK_FALSE(plan.delete_on_cancel);
          break;
      }
      // A VM that exists is never forgotten: the next operation gets it ready, never creates.
      if (to.vm_known && action.failure != ProvisionFailure::cancelled) CHECK(to.machine.phase() == P::needs_init);
      // Nothing made: the next operation starts from the beginning.
      if (!to.vm_known && action.failure == ProvisionFailure::rethrow) CHECK(to.machine.phase() == P::pending);
      break;
  }
  // The operation ended.
  CHECK(to.machine.phase() != P::busy);
  to.in_flight = false;
  to.created = false;
  to.vm_known = false;
  to.cancelled = false;
  to.creates = 0;
  to.done_steps = 0;
}

// What the step in flight ending with `result` tells the world.
void record_result(Walk& w, const StepResult& result) {
  if (result.done) {
    w.done_steps |= bit(w.step);
    if (w.step == S::create) w.created = true;
    if (w.step == S::create || w.step == S::find_vm) w.vm_known = true;
    if (w.step == S::delete_vm) w.vm_may_exist = false;
    return;
  }
  if (result.cancelled) w.cancelled = true;
  // A create refused for certain made nothing.
  if (w.step == S::create && !result.outcome_unknown) w.vm_may_exist = false;
}

}  // namespace

TEST_CASE("provision phases: every event in every reachable state of every plan keeps the rules") {
  const auto events = every_event();
  std::size_t states = 0;
  std::size_t transitions = 0;
  std::set<P> phases_seen;
  for (const auto& plan : every_plan()) {
    Walk start{ProvisionPhases(plan)};
    // An attached or initialized VM exists (or not) before anything is sent: never create it.
    start.vm_may_exist = plan.kind != ProvisionPlan::Kind::provision;
    std::set<Walk> seen{start};
    std::vector<Walk> frontier{start};
    while (!frontier.empty()) {
      const Walk from = frontier.back();
      frontier.pop_back();
      phases_seen.insert(from.machine.phase());
      for (const auto& e : events) {
        INFO(describe(from) << "; event: " << e.name);
        CHECK((from.machine.phase() == P::busy) == from.in_flight);
        Walk to = from;
        // A VM an earlier operation left behind is known to exist.
        if (e.begin && from.machine.phase() == P::needs_init) to.vm_known = true;
        if (!e.begin && !from.in_flight) {
          CHECK_THROWS_AS(to.machine.on_result(e.result), std::logic_error);
          ++transitions;
          continue;
        }
        if (e.begin && from.in_flight) {
          // A concurrent operation waits for the one in flight.
          const auto action = to.machine.begin();
          CHECK(action.kind == A::wait);
          CHECK(to.machine == from.machine);
          ++transitions;
          continue;
        }
        if (!e.begin) record_result(to, e.result);
        const auto action = e.begin ? to.machine.begin() : to.machine.on_result(e.result);
        ++transitions;
        check_action(from, to, action);
        if (seen.insert(to).second) frontier.push_back(to);
      }
    }
    states += seen.size();
  }
  // The walk is finite and reaches every phase.
  CHECK(states > 100);
  CHECK(transitions == states * every_event().size());
  CHECK(phases_seen == std::set<P>{P::pending, P::busy, P::needs_init, P::ready, P::outcome_unknown});
}

namespace {

StepResult done() {
  StepResult r;
  r.done = true;
  return r;
}

StepResult failed(bool cancelled, bool outcome_unknown) {
  StepResult r;
  r.cancelled = cancelled;
  r.outcome_unknown = outcome_unknown;
  return r;
}

ProvisionPlan plan(ProvisionPlan::Kind kind, bool copy, bool working_dir, bool delete_on_cancel) {
  ProvisionPlan p;
  p.kind = kind;
  p.copy = copy;
  p.working_dir = working_dir;
  p.delete_on_cancel = delete_on_cancel;
  return p;
}

// The steps sent until the machine finishes, every step succeeding.
std::vector<S> happy_path(ProvisionPhases& machine, bool base_running) {
  std::vector<S> steps;
  auto action = machine.begin();
  while (action.kind == A::send) {
    steps.push_back(action.step);
    auto result = done();
    result.base_running = base_running;
    action = machine.on_result(result);
    REQUIRE(steps.size() < 20);
  }
  CHECK(action.kind == A::finish);
  return steps;
}

}  // namespace

TEST_CASE("provision phases: the steps of each plan, in order") {
  using K = ProvisionPlan::Kind;
  ProvisionPhases fresh(plan(K::provision, false, false, true));
  CHECK(happy_path(fresh, false) == std::vector<S>{S::create, S::wait_ready, S::read_state});
  ProvisionPhases with_dir(plan(K::provision, false, true, true));
  CHECK(happy_path(with_dir, false) == std::vector<S>{S::create, S::wait_ready, S::make_working_dir, S::read_state});
  ProvisionPhases copy(plan(K::provision, true, true, true));
  CHECK(happy_path(copy, true) == std::vector<S>{S::find_base, S::flush_base, S::create, S::wait_ready,
                                                 S::tag_and_comment, S::make_working_dir, S::read_state});
  ProvisionPhases paused_base(plan(K::provision, true, false, true));
  CHECK(happy_path(paused_base, false) ==
        std::vector<S>{S::find_base, S::create, S::wait_ready, S::tag_and_comment, S::read_state});
  ProvisionPhases attach(plan(K::attach, false, true, false));
  CHECK(happy_path(attach, false) == std::vector<S>{S::find_vm});
  ProvisionPhases initialize(plan(K::initialize, false, true, false));
  CHECK(happy_path(initialize, false) ==
        std::vector<S>{S::find_vm, S::wait_ready, S::tag_and_comment, S::make_working_dir, S::find_vm});
  // Once ready, an operation sends nothing.
  CHECK(happy_path(fresh, false).empty());
  CHECK(fresh.phase() == P::ready);
}

TEST_CASE("provision phases: a create whose outcome is unknown is never followed by another") {
  ProvisionPhases machine(plan(ProvisionPlan::Kind::provision, false, false, false));
  REQUIRE(machine.begin().step == S::create);
  auto action = machine.on_result(failed(false, true));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::outcome_unknown));
  CHECK(machine.phase() == P::outcome_unknown);
  for (int operation = 0; operation < 3; ++operation) {
    action = machine.begin();
    CHECK((action.kind == A::fail && action.failure == ProvisionFailure::repeat_outcome_unknown));
  }
  // Even when the caller was cancelled meanwhile: the VM may exist all the same.
  ProvisionPhases cancelled(plan(ProvisionPlan::Kind::provision, false, false, true));
  (void)cancelled.begin();
  action = cancelled.on_result(failed(true, true));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::outcome_unknown));

  // A definite refusal made nothing: the next operation provisions again.
  ProvisionPhases refused(plan(ProvisionPlan::Kind::provision, false, false, false));
  (void)refused.begin();
  action = refused.on_result(failed(false, false));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::rethrow));
  CHECK(refused.phase() == P::pending);
  CHECK(refused.begin().step == S::create);
}

TEST_CASE("provision phases: a cancellation once the VM exists deletes it, or keeps it for the next operation") {
  // VMs::provision: cancelled during its last `ls`, the VM is deleted, then the cancellation raised.
  ProvisionPhases deleting(plan(ProvisionPlan::Kind::provision, false, false, true));
  (void)deleting.begin();
  REQUIRE(deleting.on_result(done()).step == S::wait_ready);
  REQUIRE(deleting.on_result(done()).step == S::read_state);
  auto action = deleting.on_result(failed(true, false));
  CHECK((action.kind == A::send && action.step == S::delete_vm && action.despite_cancellation && action.shielded));
  action = deleting.on_result(failed(false, false));  // a failed delete changes nothing for the caller
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::cancelled));

  // A backend keeps its VM: the step's error is raised, and the next operation gets it ready.
  ProvisionPhases keeping(plan(ProvisionPlan::Kind::provision, false, true, false));
  (void)keeping.begin();
  REQUIRE(keeping.on_result(done()).step == S::wait_ready);
  action = keeping.on_result(failed(true, false));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::rethrow));
  CHECK(keeping.phase() == P::needs_init);
  CHECK(happy_path(keeping, false) == std::vector<S>{S::wait_ready, S::make_working_dir});

  // Cancelled before the create: nothing to delete.
  ProvisionPhases early(plan(ProvisionPlan::Kind::provision, true, false, true));
  (void)early.begin();
  action = early.on_result(failed(true, false));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::rethrow));
  CHECK(early.phase() == P::pending);
}

TEST_CASE("provision phases: a failure to get the VM ready names the step and keeps the VM") {
  const std::vector<std::pair<std::vector<StepResult>, S>> cases{
      {{done(), failed(false, false)}, S::wait_ready},
      {{done(), done(), failed(false, false)}, S::make_working_dir},
      {{done(), done(), done(), failed(false, false)}, S::read_state},
  };
  for (const auto& [results, step] : cases) {
    INFO("fails at step " << static_cast<int>(step));
    ProvisionPhases machine(plan(ProvisionPlan::Kind::provision, false, true, true));
    auto action = machine.begin();
    for (const auto& result : results) action = machine.on_result(result);
    CHECK((action.kind == A::fail && action.failure == ProvisionFailure::initialization && action.step == step));
    CHECK(machine.phase() == P::needs_init);
    CHECK(machine.begin().step == S::wait_ready);
  }
  // Before the VM exists (the base check, the flush), errors are raised as they are.
  ProvisionPhases copy(plan(ProvisionPlan::Kind::provision, true, false, true));
  (void)copy.begin();
  REQUIRE(copy.on_result([] { auto r = done(); r.base_running = true; return r; }()).step == S::flush_base);
  const auto action = copy.on_result(failed(false, false));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::rethrow && action.step == S::flush_base));
  CHECK(copy.phase() == P::pending);
}

TEST_CASE("provision phases: an attach that fails checks again next time; one that succeeds sends nothing more") {
  ProvisionPhases machine(plan(ProvisionPlan::Kind::attach, false, true, false));
  REQUIRE(machine.begin().step == S::find_vm);
  auto action = machine.on_result(failed(false, false));
  CHECK((action.kind == A::fail && action.failure == ProvisionFailure::rethrow));
  CHECK(machine.phase() == P::pending);
  REQUIRE(machine.begin().step == S::find_vm);
  CHECK(machine.begin().kind == A::wait);  // a concurrent operation waits
  CHECK(machine.on_result(done()).kind == A::finish);
  CHECK(machine.begin().kind == A::finish);
}
