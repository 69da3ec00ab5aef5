#pragma once
// The provisioning phases of VMs and SandboxBackend, sans-IO: which request goes next, what a
// failed one means, and where a backend's VM stands between operations. The coroutine in
// src/sandbox/provision.cpp carries out each step and throws what the machine decides; every
// rule lives here and is tested without sockets (tests/unit/sandbox/provision_phases_test.cpp).
//
// The rules:
// - A provision checks a copy's base (`ls` through the scope check), flushes it when it runs,
//   then sends the one create or copy request. Nothing before the create made a VM, so a
//   failure there is raised as it is and a backend may provision again later.
// - The create is never interrupted once sent. When it fails after it may have reached exe.dev
//   (ProvisionOutcomeUnknownError) no create is ever sent again: a backend raises that error
//   on every later operation. Any other failure of it is a definite refusal: nothing was made.
// - Once the VM exists: readiness, then a copy's tags and comment (always for initialize),
//   then the working directory, then the VM's state (`ls`) after a create. A failure of those
//   is VMInitializationError naming the step; the VM is kept and a backend gets it ready on
//   its next operation, without creating again.
// - A cancellation once the VM exists deletes it when the plan says so (VMs::provision: that
//   delete runs despite the cancellation, which is then raised); otherwise the VM is kept and
//   the step's error is raised as it is.
// - A backend's concurrent operations share one provision: while one carries out steps, the
//   others wait for it to end and then look again.

#include <compare>

namespace exedev::detail {

/// One request (or readiness wait) of provisioning.
enum class ProvisionStep {
  find_base,         ///< `ls` a copy's base through the scope check
  flush_base,        ///< `sync` on the running base, so that the copy gets what was written
  create,            ///< the create (`new`) or copy (`cp`) request
  find_vm,           ///< `ls` an existing VM through the scope check (attach, initialize)
  wait_ready,        ///< readiness probes until the VM's own shell answers
  tag_and_comment,   ///< the spec's missing tags and its comment
  make_working_dir,  ///< `mkdir -p` the working directory
  read_state,        ///< `ls` the VM a provision made: the provision's result
  delete_vm,         ///< `rm` the VM a cancelled provision made
};

/// What a provision throws.
enum class ProvisionFailure {
  rethrow,                 ///< the step's error as it is
  outcome_unknown,         ///< ProvisionOutcomeUnknownError, the create's error nested
  repeat_outcome_unknown,  ///< the ProvisionOutcomeUnknownError an earlier operation raised
  initialization,          ///< VMInitializationError naming the VM and the failed step, its error nested
  cancelled,               ///< operation_aborted, once the VM made was deleted (or the delete failed)
};

/// What the coroutine does next.
struct ProvisionAction {
  enum class Kind {
    send,    ///< carry out `step`
    wait,    ///< another operation is carrying out steps: wait until it ends, then begin() again
    finish,  ///< the VM is ready
    fail,    ///< throw `failure` (`step`: the step that failed)
  };
  Kind kind = Kind::send;
  ProvisionStep step = ProvisionStep::create;
  ProvisionFailure failure = ProvisionFailure::rethrow;
  /// send: carried out even though the caller is cancelled (the delete after a cancellation);
  /// any other step is not started for a cancelled caller, and counts as cancelled.
  bool despite_cancellation = false;
  /// send: not interrupted by a cancellation once started (the create: interrupting it would
  /// leave a VM nobody knows of; the delete).
  bool shielded = false;
};

/// How the step in flight ended.
struct StepResult {
  bool done = false;  ///< it succeeded
  /// It failed with a cancellation, failed while the caller was cancelled, or was not started
  /// because the caller was cancelled.
  bool cancelled = false;
  bool base_running = false;     ///< find_base done: the base is running, so it is flushed first
  bool outcome_unknown = false;  ///< create failed after the request may have reached exe.dev
  auto operator<=>(const StepResult&) const = default;
};

/// What is to be provisioned, and how.
struct ProvisionPlan {
  enum class Kind {
    provision,   ///< make a VM from the spec (VMs::provision; a backend without a ref)
    attach,      ///< check a VM that exists (a backend with a ref): the scope check only
    initialize,  ///< get a VM that exists ready (VMs::initialize)
  };
  Kind kind = Kind::provision;
  bool copy = false;         ///< provision: a copy of a base VM, rather than a new VM from an image
  bool working_dir = false;  ///< the spec has a working directory to make
  /// A provision whose caller is cancelled once the VM exists deletes it (VMs::provision); a
  /// backend keeps it (backends never destroy their environment).
  bool delete_on_cancel = false;
  auto operator<=>(const ProvisionPlan&) const = default;
};

/// Where the VM stands between operations.
enum class ProvisionPhase {
  pending,          ///< nothing made or checked yet: the next operation starts from the beginning
  busy,             ///< an operation is carrying out steps
  needs_init,       ///< the VM exists but is not ready: the next operation gets it ready
  ready,            ///< the VM is ready
  outcome_unknown,  ///< a create may have made a VM: no create is sent again
};

class ProvisionPhases {
 public:
  explicit ProvisionPhases(ProvisionPlan plan);

  [[nodiscard]] ProvisionPhase phase() const noexcept { return phase_; }
  [[nodiscard]] const ProvisionPlan& plan() const noexcept { return plan_; }

  /// An operation needs the VM: its first action.
  [[nodiscard]] ProvisionAction begin();
  /// The step of the last `send` ended. Only while busy (std::logic_error otherwise).
  [[nodiscard]] ProvisionAction on_result(const StepResult& result);

  /// Ordered by state, so a test can enumerate the reachable states.
  auto operator<=>(const ProvisionPhases&) const = default;

 private:
  ProvisionAction send(ProvisionStep step);
  ProvisionAction finish();
  ProvisionAction end_with(ProvisionPhase phase, ProvisionFailure failure);
  void rest(ProvisionPhase phase);
  ProvisionAction after_initialization();
  ProvisionAction on_failure(const StepResult& result);

  ProvisionPlan plan_;
  ProvisionPhase phase_ = ProvisionPhase::pending;
  ProvisionStep step_ = ProvisionStep::create;  ///< busy: the step in flight
  bool vm_exists_ = false;  ///< busy: the VM exists (created, found, or left by an earlier operation)
  bool created_ = false;    ///< busy: this operation's create made it
  bool initialized_ = false;  ///< busy: readiness, tags and working directory are done
};

}  // namespace exedev::detail
