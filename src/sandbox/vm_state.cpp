#include <exedev/sandbox/vm_state.hpp>

#include <algorithm>

namespace exedev {
namespace {

constexpr const char* default_image = "exeuntu";

}  // namespace

workspace::WorkspaceRef vm_ref(const std::string& vm_name) { return workspace::WorkspaceRef{provider_name, vm_name}; }

VMState VMState::from_info(const VMInfo& info) {
  VMState state{info, vm_ref(info.name), std::nullopt};
  // `ls` sends `image` only when it is not the default (exedev-api.md §3.3).
  if (state.image.empty()) state.image = default_image;
  return state;
}

bool VMState::has_tag(const std::string& tag) const { return std::find(tags.begin(), tags.end(), tag) != tags.end(); }

}  // namespace exedev
