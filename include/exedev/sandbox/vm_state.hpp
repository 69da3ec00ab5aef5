#pragma once
// VMState: a VM as exe.dev describes it, with the WorkspaceRef that names it.

#include <optional>
#include <string>

#include <exedev/client.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev {

/// The provider name of every exe.dev WorkspaceRef; the ref's id is the VM name.
inline constexpr const char* provider_name = "exedev";

/// The WorkspaceRef of a VM.
[[nodiscard]] workspace::WorkspaceRef vm_ref(const std::string& vm_name);

/// A VM as exe.dev's `ls` reports it: the client's VMInfo (every field `ls` sends, under the
/// same names), with the default image filled in (`ls` leaves it out: `image` is then
/// "exeuntu"), and the WorkspaceRef that names the VM. exe.dev does not report a VM's egress
/// policy, environment, integrations, standalone flag or setup script, so inspect can't know
/// them (egress stays nullopt).
struct VMState : VMInfo {
  workspace::WorkspaceRef ref;
  /// Not reported by exe.dev's `ls` today: nullopt.
  std::optional<Egress> egress;

  [[nodiscard]] static VMState from_info(const VMInfo& info);
  [[nodiscard]] bool has_tag(const std::string& tag) const;
};

}  // namespace exedev
