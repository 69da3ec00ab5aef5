#include <exedev/sandbox/errors.hpp>

namespace exedev {
namespace {

std::string join_tags(const std::vector<std::string>& tags) {
  std::string out;
  for (const auto& tag : tags) out += (out.empty() ? "" : ", ") + tag;
  return out.empty() ? "none" : out;
}

std::string access_message(std::optional<unsigned> status, const std::string& command) {
  if (!status) return "no exe.dev API token: set EXE_TOKEN or pass a client with a token";
  if (*status == 401) return "exe.dev rejected the API token (401) for `" + command + "`";
  return "the exe.dev API token may not run `" + command + "` (" + std::to_string(*status) + ")";
}

}  // namespace

VMNotFoundError::VMNotFoundError(std::string vm_name)
    : WorkspaceUnavailableError("VM \"" + vm_name + "\" does not exist"), vm_name_(std::move(vm_name)) {}

VMOutOfScopeError::VMOutOfScopeError(std::string vm_name, std::string scope_tag)
    : WorkspaceUnavailableError("VM \"" + vm_name + "\" lacks the scope tag \"" + scope_tag + "\""),
      vm_name_(std::move(vm_name)), scope_tag_(std::move(scope_tag)) {}

ExeDevAccessError::ExeDevAccessError(std::optional<unsigned> status, const std::string& command,
                                     const std::string& context)
    : WorkspaceUnavailableError((context.empty() ? std::string() : context + ": ") + access_message(status, command)),
      status_(status), command_(status ? command : std::string()) {}

CommandOutcomeUnknownError::CommandOutcomeUnknownError(const std::string& vm_name, PartialOutput output)
    : WorkspaceError("the result of a command on VM \"" + vm_name +
                     "\" can't be known (the connection ended or the response couldn't be read); it may have "
                     "finished and was not run again"),
      WithPartialOutput(std::move(output)), vm_name_(vm_name) {}

ProvisionOutcomeUnknownError::ProvisionOutcomeUnknownError(std::optional<std::string> vm_name,
                                                           std::vector<std::string> tags)
    : WorkspaceError("the create request " + (vm_name ? "for VM \"" + *vm_name + "\" " : std::string()) +
                     "may or may not have made a VM (tags: " + join_tags(tags) +
                     "); nothing was retried: use VMs::lookup(spec) to find it"),
      vm_name_(std::move(vm_name)), tags_(std::move(tags)) {}

VMInitializationError::VMInitializationError(workspace::WorkspaceRef ref, const std::string& step)
    : WorkspaceError("VM \"" + ref.id + "\" exists but getting it ready failed while " + step +
                     "; it was kept: retry with VMs::initialize or destroy it"),
      ref_(std::move(ref)) {}

TransportUnsupportedError::TransportUnsupportedError(const std::string& operation, const std::string& transport,
                                                     const std::string& reason)
    : Error(errc::transport_unsupported, operation + " is not possible over " + transport + ": " + reason),
      transport_(transport) {}

}  // namespace exedev
