#include "tools/workspace_access.hpp"

#include <exedev/tools/errors.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/unavailable.hpp>

#include <filesystem>

namespace exedev::tools::detail {

void require_workspace(const workspace::Workspace& workspace, const std::string& owner) {
  if (workspace.attached()) return;
  const auto* unavailable = dynamic_cast<const workspace::UnavailableBackend*>(workspace.backend().get());
  if (unavailable != nullptr && dynamic_cast<const workspace::UnattachedBackend*>(unavailable) == nullptr) {
    throw UserError("`" + owner + "` cannot use this workspace: " + unavailable->reason());
  }
  throw UserError("`" + owner +
                  "` needs a workspace, but none is attached to this run. Attach one, for example "
                  "Workspace(std::make_shared<LocalBackend>(\".\")) for a local directory.");
}

bool supports_commands(const workspace::Workspace& workspace) {
  return workspace.attached() && !workspace.read_only() &&
         dynamic_cast<const workspace::SupportsCommands*>(workspace.backend().get()) != nullptr;
}

namespace {

// Refuses a metadata path that is a symlink: its real path differs from its own spelling.
workspace::Task<void> refuse_symlink(std::shared_ptr<workspace::Workspace> workspace, std::string path) {
  // (The awaited value is named first: GCC 12 miscompiles a co_await compared in a condition.)
  const auto real = co_await workspace->realpath(path);
  if (real != path) throw workspace::WorkspaceError("Refusing to use " + path + ": it is a symlink.");
}

}  // namespace

workspace::Task<std::string> metadata_dir(std::shared_ptr<workspace::Workspace> workspace, std::string name) {
  const std::string root = co_await workspace->working_dir();
  const std::string base = workspace::normpath(root + "/" + metadata_dir_name);
  const std::string directory = workspace::normpath(base + "/" + name);
  const std::string gitignore = base + "/.gitignore";
  try {
    co_await refuse_symlink(workspace, base);
    co_await workspace->make_dir(directory);
    co_await refuse_symlink(workspace, base);
    co_await refuse_symlink(workspace, directory);
    co_await refuse_symlink(workspace, gitignore);
    if (!co_await workspace->exists(gitignore)) co_await workspace->write_bytes(gitignore, "*\n");
  } catch (const std::filesystem::filesystem_error& error) {
    throw workspace::WorkspaceError("Cannot create " + directory + ": " + error.code().message());
  }
  co_return directory;
}

}  // namespace exedev::tools::detail
