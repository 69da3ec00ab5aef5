#pragma once
// Backends that reach no environment: every operation raises WorkspaceUnavailableError.

#include <memory>
#include <optional>
#include <string>

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/errors.hpp>

namespace exedev::workspace {

class Workspace;

/// A backend whose operations throw WorkspaceUnavailableError(reason()).
/// It "supports commands", so every file operation through Workspace reaches run() or
/// working_dir() and throws the same error. ref() is always nullopt: there is no environment to
/// name, so nothing can be reconnected to later. Workspace::attached() is false over it.
/// Its operations complete immediately, so cancellation has nothing to act on.
class UnavailableBackend : public WorkspaceBackend, public SupportsCommands {
 public:
  explicit UnavailableBackend(std::string reason);

  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] std::optional<WorkspaceRef> ref() const override { return std::nullopt; }
  /// Throws WorkspaceUnavailableError(reason()).
  Task<std::string> working_dir() override;
  /// Throws WorkspaceUnavailableError(reason()).
  Task<CommandResult> run(Command command, RunOptions options) override;

 private:
  std::string reason_;
};

/// The backend of a run that has no workspace attached. Its error says how to attach one.
class UnattachedBackend final : public UnavailableBackend {
 public:
  static constexpr const char* message =
      "No workspace is attached to this run, so it cannot run commands or use files. "
      "Attach one, for example Workspace(std::make_shared<LocalBackend>(\".\")) for a local "
      "directory; see docs/workspace.md.";
  UnattachedBackend() : UnavailableBackend(message) {}
};

/// A Workspace over an UnattachedBackend: the placeholder for a run with nothing attached.
[[nodiscard]] std::shared_ptr<Workspace> no_workspace();

}  // namespace exedev::workspace
