#include <exedev/sandbox/errors.hpp>

#include "common/inert_text.hpp"

namespace exedev {
namespace {

std::string join_tags(const std::vector<std::string>& tags) {
  std::string out;
  for (const auto& tag : tags) out += (out.empty() ? "" : ", ") + tag;
  return out.empty() ? "none" : out;
}

std::string access_message(std::optional<unsigned> status, const std::string& command, const std::string& server_message) {
  if (!status) {
    return "no exe.dev API token: set EXE_TOKEN, pass a client with a token, or let the client sign tokens with your "
           "SSH key (ClientOptions::minting)";
  }
  std::string text = *status == 401 ? "exe.dev rejected the API token (401) for `" + command + "`"
                                    : "the exe.dev API token may not run `" + command + "` (" + std::to_string(*status) + ")";
  if (!server_message.empty()) text += ": " + detail::inert_text(server_message);
  return text;
}

}  // namespace

VMNotFoundError::VMNotFoundError(std::string vm_name)
    : WorkspaceUnavailableError("VM \"" + vm_name + "\" does not exist"), vm_name_(std::move(vm_name)) {}

VMOutOfScopeError::VMOutOfScopeError(std::string vm_name, std::string scope_tag)
    : WorkspaceUnavailableError("VM \"" + vm_name + "\" lacks the scope tag \"" + scope_tag + "\""),
      vm_name_(std::move(vm_name)), scope_tag_(std::move(scope_tag)) {}

ExeDevAccessError::ExeDevAccessError(std::optional<unsigned> status, const std::string& command,
                                     const std::string& context, const std::string& server_message)
    : WorkspaceUnavailableError((context.empty() ? std::string() : context + ": ") +
                                access_message(status, command, server_message)),
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
