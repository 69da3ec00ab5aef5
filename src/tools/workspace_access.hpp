#pragma once
// What a tool set may do with the workspace it was given (workspaces-api.md §4.1).

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <string>

namespace exedev::tools::detail {

/// The tools' metadata folder under the working directory. The reference names it
/// `.pydantic-ai-harness`; this library's files start `.exedev-` (docs/workspace.md).
inline constexpr const char* metadata_dir_name = ".exedev-harness";

/// Throws UserError when `workspace` reaches no environment: "`<owner>` cannot use this
/// workspace: <reason>" for a deliberately unavailable one, a hint to attach one otherwise.
void require_workspace(const workspace::Workspace& workspace, const std::string& owner);

/// Whether commands may run: attached, not read-only, and the provider backend runs commands.
[[nodiscard]] bool supports_commands(const workspace::Workspace& workspace);

/// `<working dir>/.exedev-harness/<name>`, created (with a `.gitignore` holding "*\n" when
/// absent) through file operations only. Refuses (WorkspaceError) when either directory or the
/// `.gitignore` is a symlink; another path failure is WorkspaceError("Cannot create …").
workspace::Task<std::string> metadata_dir(workspace::Workspace& workspace, std::string name);

}  // namespace exedev::tools::detail
