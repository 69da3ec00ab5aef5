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

/// Whether process sessions may be started: commands may run, and the provider backend has
/// process sessions.
[[nodiscard]] bool supports_process_sessions(const workspace::Workspace& workspace);

/// The checks and creations of metadata_dir as one shell command, and the directory it makes.
struct MetadataSetup {
  std::string base;       ///< `<working dir>/.pydantic-ai-harness`
  std::string directory;  ///< `<base>/<name>`
  std::string script;     ///< exits 0 when done, kMetadataSymlink or kMetadataFailed otherwise
};
/// metadata_setup's exit status when it met a symlink (its path on stdout), and on any other
/// failure (left to metadata_dir's separate operations, which report it). Chosen apart from the
/// job launcher's own statuses, so the script can run first in the launcher's command.
inline constexpr int kMetadataSymlink = 113;
inline constexpr int kMetadataFailed = 114;
workspace::Task<MetadataSetup> metadata_setup(std::shared_ptr<workspace::Workspace> workspace, std::string name);
/// Whether a metadata_setup script that ended with `exit_code` made the directory; throws
/// WorkspaceError ("Refusing to use <path>: it is a symlink.") when it met a symlink.
bool metadata_setup_done(int exit_code, const std::string& stdout_text);

/// `<working dir>/.pydantic-ai-harness/<name>`, created (with a `.gitignore` holding "*\n" when
/// absent) through file operations only. Refuses (WorkspaceError) when either directory or the
/// `.gitignore` is a symlink; another path failure is WorkspaceError("Cannot create …").
/// (Parameters by value: GCC 12 miscompiles reference parameters of coroutines.)
workspace::Task<std::string> metadata_dir(std::shared_ptr<workspace::Workspace> workspace, std::string name);

}  // namespace exedev::tools::detail
