#pragma once
// Carries out the provisioning phases (sandbox/provision_phases.hpp): one coroutine sends each
// step the machine asks for, tells it how the step ended, and throws what it decides. Used by
// VMs::provision, VMs::initialize and SandboxBackend.

#include <exception>
#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vms.hpp>

#include "common/event.hpp"
#include "sandbox/provision_phases.hpp"

namespace exedev::detail {

/// A VM being provisioned (or attached, or initialized), and what the steps so far learned.
/// A backend keeps one for its life and its concurrent operations share it.
struct ProvisionSubject {
  /// `delete_on_cancel`: see ProvisionPlan; the rest of the plan comes from the spec.
  ProvisionSubject(ProvisionPlan::Kind kind, bool delete_on_cancel, VMSpec spec, std::optional<std::string> scope_tag,
                   ReadinessOptions readiness);

  VMSpec spec;
  std::optional<std::string> scope_tag;
  ReadinessOptions readiness;
  ProvisionPhases phases;
  /// The VM's name: given (attach, initialize), or set as soon as the create returns.
  std::optional<std::string> name;
  /// The VM as the last `ls` of it read it (find_vm, read_state).
  std::optional<VMInfo> state;
  /// The ProvisionOutcomeUnknownError raised, raised again by every later operation.
  std::exception_ptr unknown_outcome;
  /// Notified whenever an operation stops carrying out steps.
  Event phase_changed;
};

/// Gets the subject's VM ready: from phases.begin() until the machine finishes (returns) or
/// fails (throws what it decides), waiting while another operation carries out the steps.
/// Cancellation: as the plan says (provision_phases.hpp); the wait for another operation is
/// cancellable and then raises operation_aborted.
Task<void> walk_phases(Client client, ProvisionSubject& subject);

}  // namespace exedev::detail
