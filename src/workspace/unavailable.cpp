#include <exedev/workspace/unavailable.hpp>

#include <exedev/workspace/workspace.hpp>

namespace exedev::workspace {

UnavailableBackend::UnavailableBackend(std::string reason) : reason_(std::move(reason)) {}

Task<std::string> UnavailableBackend::working_dir() {
  throw WorkspaceUnavailableError(reason_);
  co_return std::string();
}

Task<CommandResult> UnavailableBackend::run(Command, RunOptions) {
  throw WorkspaceUnavailableError(reason_);
  co_return CommandResult{};
}

std::shared_ptr<Workspace> no_workspace() {
  return std::make_shared<Workspace>(std::make_shared<UnattachedBackend>());
}

}  // namespace exedev::workspace
