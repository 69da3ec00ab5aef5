#include <exedev/sandbox/vm_state.hpp>

#include <algorithm>

namespace exedev {
namespace {

constexpr const char* default_image = "exeuntu";

}  // namespace

workspace::WorkspaceRef vm_ref(const std::string& vm_name) { return workspace::WorkspaceRef{provider_name, vm_name}; }

VMState VMState::from_info(const VMInfo& info) {
  VMState state;
  state.ref = vm_ref(info.name);
  state.name = info.name;
  state.status = info.status;
  state.tags = info.tags;
  state.comment = info.comment;
  state.region = info.region;
  state.region_display = info.region_display;
  state.created_at = info.created_at;
  // `ls` sends `image` only when it is not the default (exedev-api.md §3.3).
  state.image = info.image.empty() ? default_image : info.image;
  state.https_url = info.https_url;
  state.ssh_dest = info.ssh_dest;
  state.ssh_host = info.ssh_host;
  state.ssh_user = info.ssh_user;
  state.shelley_url = info.shelley_url;
  state.cpu = info.allocated_cpus;
  state.memory_bytes = info.memory_capacity_bytes;
  state.disk_bytes = info.disk_capacity_bytes;
  return state;
}

bool VMState::has_tag(const std::string& tag) const { return std::find(tags.begin(), tags.end(), tag) != tags.end(); }

}  // namespace exedev
