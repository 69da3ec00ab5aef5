#include <exedev/sandbox/lookup.hpp>

#include <algorithm>
#include <stdexcept>

namespace exedev {
namespace {

bool has_all(const VMInfo& vm, const std::vector<std::string>& tags) {
  return std::all_of(tags.begin(), tags.end(),
                     [&](const std::string& tag) { return std::find(vm.tags.begin(), vm.tags.end(), tag) != vm.tags.end(); });
}

}  // namespace

std::vector<std::string> required_tags(const VMSpec& spec, const std::optional<std::string>& scope_tag) {
  std::vector<std::string> tags = spec.tags();
  if (scope_tag && std::find(tags.begin(), tags.end(), *scope_tag) == tags.end()) tags.push_back(*scope_tag);
  return tags;
}

LookupResult classify_lookup(const VMSpec& spec, const std::optional<std::string>& scope_tag,
                             const std::vector<VMInfo>& listed) {
  if (spec.tags().empty()) {
    throw std::invalid_argument("lookup needs a spec with tags: a name alone could belong to a VM made some other way");
  }
  const auto required = required_tags(spec, scope_tag);
  LookupResult result;
  if (spec.name()) {
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const VMInfo& vm) { return vm.name == *spec.name(); });
    if (it == listed.end()) return result;
    if (has_all(*it, required)) {
      result.status = LookupStatus::found;
      result.vm = VMState::from_info(*it);
    } else {
      result.status = LookupStatus::conflict;
      result.candidates.push_back(VMState::from_info(*it));
    }
    return result;
  }
  std::vector<VMState> matches;
  for (const auto& vm : listed) {
    // `ls` de-duplicates, but a caller's own listing may not.
    const bool seen = std::any_of(matches.begin(), matches.end(), [&](const VMState& m) { return m.name == vm.name; });
    if (!seen && has_all(vm, required)) matches.push_back(VMState::from_info(vm));
  }
  if (matches.size() == 1) {
    result.status = LookupStatus::found;
    result.vm = std::move(matches.front());
  } else if (matches.size() > 1) {
    result.status = LookupStatus::ambiguous;
    result.candidates = std::move(matches);
  }
  return result;
}

}  // namespace exedev
