#pragma once
// Classifying what `ls` shows against a spec: the sans-IO half of VMs::lookup, public so that
// callers (and tests) can apply the same rules to a listing they already have.

#include <optional>
#include <string>
#include <vector>

#include <exedev/client.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vm_state.hpp>

namespace exedev {

enum class LookupStatus {
  found,      ///< Exactly one VM has the spec's name (if any) and all its tags plus the scope tag.
  not_found,  ///< None is visible now. That does not prove the create failed.
  conflict,   ///< A VM has the name but lacks some of the tags. Never attached for you.
  ambiguous,  ///< With no name to go by, several VMs carry all the tags.
};

struct LookupResult {
  LookupStatus status = LookupStatus::not_found;
  /// The VM, when status is found.
  std::optional<VMState> vm;
  /// The VMs to inspect yourself: the named VM for conflict, every match for ambiguous.
  std::vector<VMState> candidates;
};

/// The tags a VM made from `spec` carries: the spec's tags and the scope tag, without duplicates.
[[nodiscard]] std::vector<std::string> required_tags(const VMSpec& spec, const std::optional<std::string>& scope_tag);

/// Classifies `listed` (any superset of the relevant VMs). Throws std::invalid_argument when the
/// spec has no tags: a name alone could belong to a VM made some other way.
[[nodiscard]] LookupResult classify_lookup(const VMSpec& spec, const std::optional<std::string>& scope_tag,
                                           const std::vector<VMInfo>& listed);

}  // namespace exedev
