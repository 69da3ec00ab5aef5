#pragma once
// What a tool set may do with the workspace it was given (workspaces-api.md §4.1).

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <memory>
#include <string>

namespace exedev::tools::detail {

/// The tools' metadata folder under the working directory, named as the reference names it:
/// Shell's background jobs live below it and are a protocol shared with the reference harness
/// (a job either starts, the other can check and stop).
inline constexpr const char* metadata_dir_name = ".pydantic-ai-harness";

/// Throws UserError when `workspace` reaches no environment: "`<owner>` cannot use this
/// workspace: <reason>" for a deliberately unavailable one, a hint to attach one otherwise.
void require_workspace(const workspace::Workspace& workspace, const std::string& owner);

/// Whether commands may run: attached, not read-only, and the provider backend runs commands.
[[nodiscard]] bool supports_commands(const workspace::Workspace& workspace);

/// `<working dir>/.pydantic-ai-harness/<name>`, created (with a `.gitignore` holding "*\n" when
/// absent) through file operations only. Refuses (WorkspaceError) when either directory or the
/// `.gitignore` is a symlink; another path failure is WorkspaceError("Cannot create …").
/// (Parameters by value: GCC 12 miscompiles reference parameters of coroutines.)
workspace::Task<std::string> metadata_dir(std::shared_ptr<workspace::Workspace> workspace, std::string name);

}  // namespace exedev::tools::detail
