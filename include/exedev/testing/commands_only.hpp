#pragma once
// A view of a backend that exposes only ref(), working_dir() and run(): Workspace derives its
// file operations from the shell, so running the conformance suite on this view certifies the
// shell-derived filesystem on the backend's real shell. Header-only.

#include <exedev/workspace/backend.hpp>

#include <functional>
#include <memory>
#include <utility>

namespace exedev::testing {

class CommandsOnly final : public workspace::WorkspaceBackend, public workspace::SupportsCommands {
 public:
  /// `inner` must also implement SupportsCommands (std::bad_cast otherwise).
  explicit CommandsOnly(std::shared_ptr<workspace::WorkspaceBackend> inner)
      : inner_(std::move(inner)), commands_(dynamic_cast<workspace::SupportsCommands&>(*inner_)) {}

  [[nodiscard]] std::optional<workspace::WorkspaceRef> ref() const override { return inner_->ref(); }
  workspace::Task<std::string> working_dir() override { return inner_->working_dir(); }
  workspace::Task<workspace::CommandResult> run(workspace::Command command, workspace::RunOptions options) override {
    ++commands_run_;
    auto result = co_await commands_.run(std::move(command), std::move(options));
    if (rewrite_) co_return rewrite_(std::move(result));
    co_return result;
  }
  [[nodiscard]] workspace::ShellFilesystemLimits shell_filesystem_limits() const override { return limits_; }

  /// Lets a test damage results on their way back (truncated or garbled output).
  void set_rewrite(std::function<workspace::CommandResult(workspace::CommandResult)> rewrite) {
    rewrite_ = std::move(rewrite);
  }
  /// The page and chunk sizes the shell-derived filesystem uses on this view.
  void set_limits(workspace::ShellFilesystemLimits limits) { limits_ = limits; }
  /// How many commands went through this view (each file operation costs some).
  [[nodiscard]] int commands_run() const { return commands_run_; }

 private:
  std::shared_ptr<workspace::WorkspaceBackend> inner_;
  workspace::SupportsCommands& commands_;
  std::function<workspace::CommandResult(workspace::CommandResult)> rewrite_;
  workspace::ShellFilesystemLimits limits_;
  int commands_run_ = 0;
};

}  // namespace exedev::testing
