#pragma once
// VMState: a VM as exe.dev describes it, with the WorkspaceRef that names it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <exedev/client.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev {

/// The provider name of every exe.dev WorkspaceRef; the ref's id is the VM name.
inline constexpr const char* provider_name = "exedev";

/// The WorkspaceRef of a VM.
[[nodiscard]] workspace::WorkspaceRef vm_ref(const std::string& vm_name);

/// A VM as exe.dev's `ls` reports it: every field `ls` sends. exe.dev does not report a VM's
/// egress policy, environment, integrations, standalone flag or setup script, so inspect can't
/// know them (egress stays nullopt).
struct VMState {
  workspace::WorkspaceRef ref;
  std::string name;
  VMStatus status;
  std::vector<std::string> tags;
  std::string comment;
  /// Not reported by exe.dev's `ls` today: nullopt.
  std::optional<Egress> egress;
  std::string region;
  std::string region_display;
  std::string created_at;  ///< RFC 3339, as exe.dev sent it.
  /// The image; `ls` leaves out the default one, which is then "exeuntu".
  std::string image;
  std::string https_url;
  std::string ssh_dest;
  std::string ssh_host;
  std::string ssh_user;     ///< Empty unless exe.dev needs one.
  std::string shelley_url;  ///< exeuntu VMs only.
  std::optional<unsigned> cpu;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> disk_bytes;

  [[nodiscard]] static VMState from_info(const VMInfo& info);
  [[nodiscard]] bool has_tag(const std::string& tag) const;
};

}  // namespace exedev
